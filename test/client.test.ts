import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  StoreConnection,
  StorePool,
  StoreArgumentError,
  StoreProtocolError,
  StoreReplyError,
  StoreTimeoutError,
  StoreUnavailableError,
} from '../services/client/index.ts';
import { startFakeStore, type FakeAction, type FakeStore } from './helpers/fake-store.ts';
import { freePort } from '../services/shared/free-port.ts';
import { listen } from '../services/shared/listen.ts';
import { nextTurn, waitUntil } from './helpers/wait-until.ts';
import { numberedKeys } from './helpers/keys.ts';
import { b64 } from './helpers/base64.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fake(handle: (line: string) => FakeAction, port = 0): Promise<FakeStore> {
  const store = await startFakeStore(handle, port);
  cleanups.push(() => store.close());
  return store;
}

function connection(port: number, options: Partial<ConstructorParameters<typeof StoreConnection>[0]> = {}): StoreConnection {
  const conn = new StoreConnection({ host: '127.0.0.1', port, timeoutMs: 1000, ...options });
  cleanups.push(() => conn.destroy());
  return conn;
}

/** A port nothing listens on: bound, then released. */
const scripted: Record<string, string> = {
  'GET hello': 'VALUE d29ybGQ=',
  'GET empty': 'VALUE ',
  'GET stripped': 'VALUE',
  'GET missing': 'NOT_FOUND',
  'SET k v w': 'OK',
  'SETEX k 10 v': 'OK',
  'DELETE k': 'OK',
  USAGE: 'USAGE 1234',
  PING: 'PONG',
  'TTL k': 'TTL 7',
  'TTL forever': 'TTL -1',
  'TTL missing': 'NOT_FOUND',
  'EXPIRE k 5': 'OK',
  'EXPIRE missing 5': 'NOT_FOUND',
  STATS: 'STATS keys=3 usage_bytes=42 hits=1',
  'GET boom': 'ERROR out of memory',
  'GET weird': 'HELLO THERE',
};

describe('StoreConnection typed commands', () => {
  it('parses every reply shape of the protocol', async () => {
    const store = await fake((line) => scripted[line] ?? 'ERROR unknown command');
    const conn = connection(store.port);
    expect((await conn.get('hello'))?.toString()).toBe('world');
    expect((await conn.get('empty'))?.length).toBe(0);
    expect((await conn.get('stripped'))?.length).toBe(0);
    expect(await conn.get('missing')).toBeNull();
    await conn.set('k', 'v w');
    await conn.set('k', 'v', 10);
    await conn.del('k');
    expect(await conn.usage()).toBe(1234);
    await conn.ping();
    expect(await conn.ttl('k')).toBe(7);
    expect(await conn.ttl('forever')).toBe(-1);
    expect(await conn.ttl('missing')).toBeNull();
    expect(await conn.expire('k', 5)).toBe(true);
    expect(await conn.expire('missing', 5)).toBe(false);
    expect(await conn.stats()).toEqual({ keys: '3', usage_bytes: '42', hits: '1' });
  });

  it('turns ERROR replies into StoreReplyError and odd replies into StoreProtocolError', async () => {
    const store = await fake((line) => scripted[line] ?? 'ERROR unknown command');
    const conn = connection(store.port);
    const err = await conn.get('boom').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreReplyError);
    expect((err as StoreReplyError).reason).toBe('out of memory');
    await expect(conn.get('weird')).rejects.toBeInstanceOf(StoreProtocolError);
    // the connection is still usable after both
    expect((await conn.get('hello'))?.toString()).toBe('world');
  });

  it('sends binary values byte for byte', async () => {
    const store = await fake(() => 'OK');
    const conn = connection(store.port);
    const value = Buffer.from([0x00, 0xff, 0x20, 0x0d, 0x41]);
    await conn.set('bin', value);
    expect(store.receivedRaw).toEqual([Buffer.concat([Buffer.from('SET bin '), value])]);
  });

  it('refuses keys and values that would smuggle a second command, sending nothing: a typed error with a code, through the promise', async () => {
    const store = await fake(() => 'OK');
    const conn = connection(store.port);
    const refused = async (command: () => Promise<unknown>, code: string): Promise<void> => {
      let promise: Promise<unknown> | undefined;
      expect(() => (promise = command())).not.toThrow();
      const err = await promise!.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(StoreArgumentError);
      expect((err as StoreArgumentError).code).toBe(code);
    };
    await refused(() => conn.get('a\nDELETE b'), 'invalid_key');
    await refused(() => conn.get('a b'), 'invalid_key');
    await refused(() => conn.get(''), 'invalid_key');
    await refused(() => conn.get('x'.repeat(251)), 'invalid_key');
    await refused(() => conn.set('k', 'v\nDELETE b'), 'invalid_value');
    await refused(() => conn.set('k', 'ends with CR\r'), 'invalid_value');
    await refused(() => conn.set('k', 'v', 0), 'invalid_seconds');
    await refused(() => conn.expire('k', 1.5), 'invalid_seconds');
    await conn.ping().catch(() => {}); // a real command, to prove the line count below
    expect(store.received).toEqual(['PING']);
  });
});

/** A server that answers PONG to every line and records each chunk as it arrived, per socket. */
async function chunkRecorder(): Promise<{ port: number; chunks: Map<Socket, string[]> }> {
  const chunks = new Map<Socket, string[]>();
  const server = createServer((socket) => {
    chunks.set(socket, []);
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      chunks.get(socket)!.push(chunk.toString('latin1'));
      socket.write('PONG\n'.repeat(chunk.toString('latin1').split('\n').length - 1));
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  cleanups.push(() => {
    for (const s of chunks.keys()) s.destroy();
    return new Promise((r) => server.close(r));
  });
  return { port, chunks };
}

/** Resolves in the next turn of the event loop (after this turn's setImmediate callbacks). */

describe('StoreConnection write batching', () => {
  it('sends the commands of one event-loop turn in one write, across ticks and microtasks', async () => {
    const { port, chunks } = await chunkRecorder();
    const conn = connection(port);
    await conn.connect();
    await nextTurn();
    const replies = [conn.ping()];
    process.nextTick(() => replies.push(conn.ping()));
    await Promise.resolve();
    replies.push(conn.ping());
    await new Promise<void>((r) => process.nextTick(r));
    replies.push(conn.ping());
    expect(conn.batching).toBe(true);
    await nextTurn();
    expect(conn.batching).toBe(false);
    await Promise.all(replies);
    expect([...chunks.values()]).toEqual([['PING\nPING\nPING\nPING\n']]);
    // the next turn is a write of its own
    await conn.ping();
    expect([...chunks.values()][0]).toEqual(['PING\nPING\nPING\nPING\n', 'PING\n']);
  });

  it('keeps binary values byte for byte in a batch mixed with text commands', async () => {
    const store = await fake((line) => (line.startsWith('SET') ? 'OK' : 'PONG'));
    const conn = connection(store.port);
    await conn.connect();
    const value = Buffer.from([0x00, 0xff, 0x20, 0x0d, 0x41]);
    await Promise.all([conn.ping(), conn.set('bin', value), conn.set('text', 'é'), conn.ping()]);
    expect(store.receivedRaw).toEqual([
      Buffer.from('PING'),
      Buffer.concat([Buffer.from('SET bin '), value]),
      Buffer.from('SET text é'),
      Buffer.from('PING'),
    ]);
  });

  it('drops the unsent batch of a destroyed connection: its commands fail, nothing is written', async () => {
    const { port, chunks } = await chunkRecorder();
    const conn = connection(port);
    await conn.connect();
    const pending = [conn.ping(), conn.ping()];
    conn.destroy();
    for (const p of pending) await expect(p).rejects.toBeInstanceOf(StoreUnavailableError);
    await nextTurn();
    expect([...chunks.values()].flat()).toEqual([]);
  });
});

describe('StoreConnection pipelining and failures', () => {
  it('matches 5,000 pipelined replies in order', async () => {
    const store = await fake((line) => `VALUE ${b64(line.slice(4))}`);
    const conn = connection(store.port);
    const keys = numberedKeys(5000, 'key');
    const values = await Promise.all(keys.map((k) => conn.get(k)));
    expect(values.map((v) => v?.toString())).toEqual(keys);
  });

  it('fails with StoreUnavailableError when nothing listens, at once on later calls', async () => {
    const conn = connection(await freePort());
    await expect(conn.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    // now disconnected and backing off: the next command must not wait for a socket
    await expect(conn.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(conn.connect()).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('times out when the store never answers, then works again on a new socket', async () => {
    let silent = true;
    const store = await fake(() => (silent ? { silent: true } : 'PONG'));
    const conn = connection(store.port, { timeoutMs: 100 });
    const results = await Promise.allSettled([conn.ping(), conn.ping(), conn.ping()]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreTimeoutError);
    }
    silent = false;
    // reconnects by itself; retry until the background reconnect has happened
    await waitUntil('the background reconnect', () => conn.ping().then(() => true), { everyMs: 10 });
    expect(conn.state).toBe('connected');
  });

  it('rejects in-flight commands when the store dies mid-request', async () => {
    const store = await fake((line) => (line === 'GET die' ? { close: true } : 'PONG'));
    const conn = connection(store.port);
    const inflight = [conn.get('die'), conn.ping(), conn.ping()];
    for (const p of inflight) await expect(p).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('reconnects by itself when the store comes back on the same port', async () => {
    let store = await startFakeStore(() => 'PONG');
    const port = store.port;
    const conn = connection(port);
    await conn.ping();
    await store.close();
    await expect(conn.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    store = await fake(() => 'PONG', port);
    await waitUntil('the background reconnect', () => conn.ping().then(() => true), { everyMs: 10 });
    expect(conn.state).toBe('connected');
  });

  it('refuses commands past maxPending instead of queueing without bound', async () => {
    const store = await fake(() => ({ silent: true }));
    const conn = connection(store.port, { maxPending: 3, timeoutMs: 5000 });
    const queued = [conn.ping(), conn.ping(), conn.ping()];
    await expect(conn.ping()).rejects.toThrow(/too many pending/);
    conn.destroy();
    for (const p of queued) await expect(p).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('close() lets pending commands finish first', async () => {
    const store = await fake(() => 'PONG');
    const conn = connection(store.port);
    await conn.connect();
    const pending = conn.ping();
    await conn.close();
    await expect(pending).resolves.toBeUndefined();
    await expect(conn.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('StorePool', () => {
  it('keeps persistent connections and spreads commands over them', async () => {
    const store = await fake(() => 'PONG');
    const pool = new StorePool({ host: '127.0.0.1', port: store.port, size: 3 });
    cleanups.push(() => pool.destroy());
    expect(await pool.connect()).toBe(true);
    await Promise.all(Array.from({ length: 30 }, () => pool.ping()));
    expect(store.sockets.size).toBe(3);
    expect(pool.stateCounts().connected).toBe(3);
  });

  it('after a time-out fails fast (StoreUnavailableError, not another time-out) until the store answers a PING again', async () => {
    let silent = false;
    const store = await fake(() => (silent ? { silent: true } : 'PONG'));
    const changes: boolean[] = [];
    const pool = new StorePool({ host: '127.0.0.1', port: store.port, size: 2, timeoutMs: 100, onUpChange: (up) => changes.push(up) });
    cleanups.push(() => pool.destroy());
    expect(await pool.connect()).toBe(true);
    expect(pool.up).toBe(true);
    silent = true;
    await expect(pool.ping()).rejects.toBeInstanceOf(StoreTimeoutError);
    expect(pool.silent).toBe(true);
    expect(pool.up).toBe(false);
    // Every command now fails at once: none is sent to the silent store.
    const sent = store.received.length;
    const fast = await Promise.allSettled([pool.ping(), pool.ping(), pool.get('k')]);
    for (const r of fast) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    expect(store.received.length - sent).toBeLessThanOrEqual(1); // at most the reconnected socket's PING
    silent = false;
    await waitUntil('the store answered a PING again', async () => (pool.up ? true : undefined), { everyMs: 10 });
    await expect(pool.ping()).resolves.toBeUndefined();
    expect(changes).toEqual([true, false, true]); // up and down once each, not per command
  });

  it('sends one turn of commands on one connection, and each turn on the next one', async () => {
    const { port, chunks } = await chunkRecorder();
    const pool = new StorePool({ host: '127.0.0.1', port, size: 3 });
    cleanups.push(() => pool.destroy());
    expect(await pool.connect()).toBe(true);
    for (let turn = 0; turn < 6; turn++) {
      await Promise.all(Array.from({ length: 4 }, () => pool.ping()));
      await nextTurn();
    }
    // 6 turns of 4 commands over 3 connections: two writes of 4 lines on each
    expect([...chunks.values()].map((c) => c.join('|'))).toEqual(Array(3).fill('PING\nPING\nPING\nPING\n|PING\nPING\nPING\nPING\n'));
  });

  it('reports each typed command to its observer with result and duration', async () => {
    const store = await fake((line) => scripted[line] ?? 'ERROR unknown command');
    const pool = new StorePool({ host: '127.0.0.1', port: store.port, size: 1 });
    cleanups.push(() => pool.destroy());
    const seen: [string, string][] = [];
    pool.observer = (command, result, seconds) => {
      expect(seconds).toBeGreaterThanOrEqual(0);
      seen.push([command, result]);
    };
    await pool.get('hello');
    await pool.get('missing');
    await pool.get('boom').catch(() => {});
    expect(seen).toEqual([['GET', 'ok'], ['GET', 'not_found'], ['GET', 'error']]);
  });
});
