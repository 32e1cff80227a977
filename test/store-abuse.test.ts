// Hostile clients against the real store server (in-process, port 0, logs captured as
// parsed JSON): one that pipelines without reading, thousands of connections opened and
// dropped, one that sends a byte at a time, lines at and just over the bound, a value of
// exactly MAX_VALUE_BYTES. Through all of them the store stays within its memory and
// connection bounds, keeps serving everyone else, and logs an offender once, not per byte.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StoreConnection } from '../services/client/index.ts';
import { GET } from '../services/protocol/command-parser.ts';
import { lineBound } from '../services/protocol/limits.ts';
import { RESULT_OK } from '../services/store/store-metrics.ts';
import { destroyAll, track } from './helpers/cleanup.ts';
import { LineClient, nonReader } from './helpers/line-client.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

afterEach(destroyAll);

const warnings = (store: TestStore) => store.logs.filter((l) => typeof l.level === 'number' && l.level >= 40);

/** Resolves once `cond` holds, checking after each turn of the event loop (no timers). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

/** Answers `rounds` PINGs and a SET/GET round trip: the store is serving this client. */
let clientNo = 0;
/** GETs that stillServes() made, so a test can tell them from an abuser's. */
let servedGets = 0;
async function stillServes(c: LineClient, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) expect(await c.request('PING')).toBe('PONG');
  const key = `alive:${clientNo++}`;
  const v = `value of ${key}`;
  expect(await c.request(`SET ${key} ${v}`)).toBe('OK');
  expect(await c.request(`GET ${key}`)).toBe(`VALUE ${b64(v)}`);
  servedGets++;
}

describe('a client that pipelines without ever reading', () => {
  it('is read only as fast as it takes replies, costs the store bounded memory, and others are served meanwhile', async () => {
    const store = await startTestStore();
    const others = [await store.client(), await store.client(), await store.client()];
    const value = 'x'.repeat(16_000);
    const replyBytes = `VALUE ${b64(value)}\n`.length; // ~21 KB per GET
    expect(await others[0]!.request(`SET big ${value}`)).toBe('OK');
    // The abuser's GETs answered so far (the other clients' own GETs taken out).
    const gets = () => store.service.metrics.commands[GET * 3 + RESULT_OK]! - servedGets;

    const abuser = await nonReader(store.port);
    const burst = Buffer.from('GET big\n'.repeat(1024)); // 8 KiB of commands asking for ~22 MB of replies
    const bursts = 512; // 4 MiB of commands in all: ~11 GB of replies if the store answered them all
    for (let i = 0; i < bursts; i++) abuser.write(burst);
    const flowOf = () => store.service.server.connectionFlows().find((f) => f.paused);
    await vi.waitFor(() => expect(flowOf()).toBeDefined(), { timeout: 10_000, interval: 5 });

    // The kernel buffers between the two fill up (and may grow) while the others keep being
    // served; once they are full the store reads nothing more from the abuser and runs none
    // of the commands it holds (reading pauses as soon as a read holds more than a turn's
    // commands, so the answered count is watched too).
    let stable = 0;
    for (let round = 0; round < 200 && stable < 3; round++) {
      const before = flowOf()?.bytesRead;
      const answeredBefore = gets();
      await Promise.all(others.map((c) => stillServes(c, 5)));
      const after = flowOf()?.bytesRead;
      stable = before !== undefined && before === after && gets() === answeredBefore ? stable + 1 : 0;
    }
    expect(stable).toBe(3);
    const readWhenFull = flowOf()!.bytesRead;
    const answeredWhenFull = gets();
    await Promise.all(others.map((c) => stillServes(c, 50)));
    const flow = flowOf()!;
    expect(flow.bytesRead).toBe(readWhenFull);
    expect(gets()).toBe(answeredWhenFull);

    // What the store holds for it: one early flush plus a reply of queued output, and the
    // commands of about one read; everything else waits in the abuser's own buffers.
    expect(flow.writableLength).toBeLessThan(256 * 1024);
    expect(flow.bytesRead).toBeLessThan(burst.length * bursts / 4);
    expect(answeredWhenFull * replyBytes).toBeLessThan(64 * 1024 * 1024); // bounded by kernel buffers, not by the 4 MiB asked
    expect(abuser.writableLength).toBeGreaterThan(0);
    expect(warnings(store)).toEqual([]); // nothing logged per command

    abuser.destroy();
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(3), { interval: 5 });
    await stillServes(others[0]!);
  });

  it('a pipelined flood of SETs never takes USAGE past MAX_MEMORY_BYTES', async () => {
    const cap = 64 * 1024;
    const store = await startTestStore({ maxMemoryBytes: cap });
    const c = await store.client();
    const n = 20_000;
    let maxUsage = 0;
    c.socket.on('data', () => (maxUsage = Math.max(maxUsage, store.service.engine.usageBytes)));
    const lines: string[] = [];
    for (let i = 0; i < n; i++) lines.push(`SET flood:${i} ${'v'.repeat(100)}\n`);
    c.send(lines.join(''));
    const replies = await c.lines(n);
    expect(replies.every((r) => r === 'OK')).toBe(true);
    expect(maxUsage).toBeLessThanOrEqual(cap);
    expect(store.service.engine.usageBytes).toBeLessThanOrEqual(cap);
    expect(store.service.engine.evictions).toBeGreaterThan(n / 2);
    // The newest key is there, byte for byte; the oldest was evicted.
    expect(await c.request(`GET flood:${n - 1}`)).toBe(`VALUE ${b64('v'.repeat(100))}`);
    expect(await c.request('GET flood:0')).toBe('NOT_FOUND');
  });
});

describe('connection churn', () => {
  it('3,000 connections opened and dropped in every way: the gauge returns to baseline and the store still serves', async () => {
    const store = await startTestStore();
    const total = 3000;
    const batch = 200;
    let pongs = 0;
    // Each connection: dropped at once, dropped mid-line, dropped with a pipelined command unread,
    // or a clean PING and QUIT.
    const one = (i: number) =>
      new Promise<void>((resolve) => {
        const s = connect({ port: store.port, host: '127.0.0.1' });
        s.on('error', () => resolve()); // a reset while dropping is fine
        s.on('close', () => resolve());
        s.once('connect', () => {
          switch (i % 4) {
            case 0:
              s.destroy();
              break;
            case 1:
              s.write('SET half');
              s.destroy();
              break;
            case 2:
              s.write(`SET churn:${i} v\nGET churn:${i}\n`);
              s.destroy();
              break;
            case 3:
              s.setEncoding('latin1');
              s.on('data', (d: string) => {
                if (d.startsWith('PONG')) pongs++;
                if (d.includes('BYE')) s.destroy();
              });
              s.write('PING\nQUIT\n');
              break;
          }
        });
      });
    for (let start = 0; start < total; start += batch) {
      await Promise.all(Array.from({ length: batch }, (_, k) => one(start + k)));
    }
    expect(pongs).toBe(total / 4);
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
    const metrics = (await store.admin('/metrics')).body;
    expect(metrics).toMatch(/^kvstore_connections 0$/m);
    expect(metrics).toMatch(new RegExp(`^kvstore_connections_total ${total}$`, 'm'));
    expect(store.service.metrics.rejectedConnections).toBe(0);
    await stillServes(await store.client());
    expect(warnings(store)).toEqual([]);
  });

  it('past MAX_CONNECTIONS: never more open than the limit, each refused one told once, all others served', async () => {
    const max = 50;
    const store = await startTestStore({ maxConnections: max });
    const server = store.service.server;
    let most = 0;
    // Runs after the store's own connection handler: the count it sees includes this socket.
    server.server.on('connection', () => (most = Math.max(most, server.connectionCount)));
    const clients = await Promise.all(Array.from({ length: 200 }, () => LineClient.connect(store.port)));
    // Every client gets exactly one line: PONG when admitted, the refusal when not.
    const answers = await Promise.all(clients.map((c) => c.request('PING').catch(() => c.received[0] ?? 'closed')));
    expect(answers.filter((a) => a === 'PONG')).toHaveLength(max);
    expect(answers.filter((a) => a === 'ERROR max connections reached')).toHaveLength(200 - max);
    expect(most).toBeLessThanOrEqual(max);
    expect(server.connectionCount).toBe(max);
    expect(store.service.metrics.rejectedConnections).toBe(200 - max);
    // One warning per refused connection, not per byte or per retry.
    expect(warnings(store).filter((l) => l.msg === 'max connections reached: refusing a connection')).toHaveLength(200 - max);

    for (const c of clients) c.destroy();
    await vi.waitFor(() => expect(server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
    await stillServes(await store.client());
  });
});

describe('a client that sends one byte at a time', () => {
  it('gets its answers and never blocks another client', async () => {
    const store = await startTestStore();
    const slow = await store.client();
    const fast = await store.client();
    const value = 'slow value with spaces '.repeat(8);
    const script = Buffer.from(`SET slow ${value}\nGET slow\nPING\n`);
    const received = () => store.service.metrics.receivedBytes;
    let expected = received();
    for (let i = 0; i < script.length; i++) {
      slow.send(script.subarray(i, i + 1));
      expected += 1;
      await until(() => received() >= expected); // the store has taken this byte
      if (i % 8 === 0) {
        // Between the slow client's bytes the other one gets full round trips.
        expect(await fast.request('PING')).toBe('PONG');
        expected += 'PING\n'.length;
      }
    }
    expect(await slow.lines(3)).toEqual(['OK', `VALUE ${b64(value)}`, 'PONG']);
    expect(slow.received).toHaveLength(3); // nothing for partial lines
    expect(warnings(store)).toEqual([]);
  });
});

describe('the line bound', () => {
  const maxValue = 1000;
  const bound = lineBound(maxValue); // 1512

  it('a line of exactly the bound is framed and answered, and the connection stays', async () => {
    const store = await startTestStore({ maxValueBytes: maxValue });
    const c = await store.client();
    const atBound = `SET k ${'x'.repeat(bound - 6)}`;
    expect(Buffer.byteLength(atBound)).toBe(bound);
    // Sent in pieces so the held-partial path counts the bytes too.
    for (let i = 0; i < atBound.length; i += 100) c.send(atBound.slice(i, i + 100));
    c.send('\n');
    expect(await c.line()).toBe('ERROR value too large'); // framed: only the value is over
    // With CRLF the CR counts: bound - 1 bytes + CR is still within.
    expect(await c.request(`SET k ${'y'.repeat(bound - 7)}\r`)).toBe('ERROR value too large');
    // The longest valid command fits with room to spare.
    const longest = `SETEX ${'k'.repeat(250)} 1000000000 ${'z'.repeat(maxValue)}`;
    expect(Buffer.byteLength(longest)).toBeLessThan(bound);
    expect(await c.request(longest + '\r')).toBe('OK');
    expect(await c.request(`GET ${'k'.repeat(250)}`)).toBe(`VALUE ${b64('z'.repeat(maxValue))}`);
    expect(await c.request('PING')).toBe('PONG');
    expect(warnings(store)).toEqual([]);
  });

  it('one byte over gets `ERROR line too long` and a close, logged once however much more is sent', async () => {
    const store = await startTestStore({ maxValueBytes: maxValue });
    const other = await store.client();
    const c = await store.client();
    expect(await c.request('PING')).toBe('PONG');
    // bound + 1 bytes and no LF yet: the store cannot frame this line and says so at once.
    const over = Buffer.alloc(bound + 1, 0x61);
    for (let i = 0; i < over.length; i += 97) c.send(over.subarray(i, i + 97));
    expect(await c.line()).toBe('ERROR line too long');
    // The client keeps sending (it has not read the reply yet): dropped, not logged again.
    for (let i = 0; i < 50 && !c.socket.destroyed; i++) c.send(Buffer.alloc(1000, 0x62));
    c.send('\nPING\n');
    await c.closed;
    expect(c.received).toEqual(['PONG', 'ERROR line too long']);
    const logged = store.logs.filter((l) => l.msg === 'line too long: closing the connection');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ maxLineBytes: bound });
    expect(store.service.metrics.protocolErrors.reduce((a, b) => a + b, 0)).toBe(1);
    await stillServes(other);
  });

  it('the same line with its LF: one byte over the bound is too long, at the bound it is not', async () => {
    const store = await startTestStore({ maxValueBytes: maxValue });
    const ok = await store.client();
    expect(await ok.request(Buffer.alloc(bound, 0x61))).toBe('ERROR unknown command');
    const c = await store.client();
    expect(await c.request(Buffer.alloc(bound + 1, 0x61))).toBe('ERROR line too long');
    await c.closed;
    expect(await ok.request('PING')).toBe('PONG');
  });
});

describe('an over-long line queued behind replies the client has not read', () => {
  it('is answered in order after every earlier reply, closes the connection, and is logged once', async () => {
    const store = await startTestStore({ maxValueBytes: 20_000 });
    const setup = await store.client();
    const value = 'x'.repeat(16_000);
    expect(await setup.request(`SET big ${value}`)).toBe('OK');
    const c = await LineClient.connect(store.port);
    c.socket.pause(); // not reading: the store stops after a few replies and queues the rest
    const n = 2000;
    c.send('GET big\n'.repeat(n) + 'y'.repeat(lineBound(20_000) + 1) + '\nPING\n');
    await vi.waitFor(() => expect(store.service.server.connectionFlows().some((f) => f.paused)).toBe(true), { timeout: 10_000, interval: 5 });
    c.socket.resume();
    await c.closed;
    expect(c.received).toHaveLength(n + 1);
    expect(c.received.slice(0, n).every((r) => r === `VALUE ${b64(value)}`)).toBe(true);
    expect(c.received[n]).toBe('ERROR line too long'); // and the PING after it never ran
    expect(store.logs.filter((l) => l.msg === 'line too long: closing the connection')).toHaveLength(1);
    await stillServes(setup);
  });
});

describe('a value of exactly MAX_VALUE_BYTES', () => {
  it('is stored and read back byte for byte (default 1 MiB, binary), one byte more is refused and changes nothing', async () => {
    const store = await startTestStore();
    const max = store.config.maxValueBytes;
    expect(max).toBe(1024 * 1024);
    // Every byte value but LF; the last byte is not CR (a CR before the LF belongs to the line ending).
    const value = randomBytes(max);
    for (let i = 0; i < value.length; i++) if (value[i] === 0x0a) value[i] = 0x0b;
    value[value.length - 1] = 0x41;
    const c = await store.client();
    expect(await c.request(Buffer.concat([Buffer.from('SET max '), value]))).toBe('OK');
    const reply = await c.request('GET max');
    expect(reply.startsWith('VALUE ')).toBe(true);
    expect(Buffer.from(reply.slice(6), 'base64').equals(value)).toBe(true);
    expect(await c.request('USAGE')).toBe(`USAGE ${3 + max}`);

    expect(await c.request(Buffer.concat([Buffer.from('SET max '), value, Buffer.from('!')]))).toBe('ERROR value too large');
    expect(await c.request('USAGE')).toBe(`USAGE ${3 + max}`);

    // Through the client library as well (what the backend uses).
    const conn = track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 10_000, reconnect: false }));
    const got = await conn.get('max');
    expect(got?.equals(value)).toBe(true);
    const again = Buffer.from(value);
    again[0] = 0x5a;
    await conn.set('max2', again);
    expect((await conn.get('max2'))?.equals(again)).toBe(true);
  });
});
