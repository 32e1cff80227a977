// The store's connections as descriptors (native-client-socket.ts): taken from Node's
// listener without a net.Socket, read by the add-on's poller, written with write(2), with
// what the kernel refuses queued here until the poller says the socket takes output again.
// The store suites run through it by default (vitest.config.ts); here, what is its own.
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EVENT_FIELDS, loadSocketIo, type SocketIo } from '../services/store/network/native-io.ts';
import { NativeClients, type TcpHandle } from '../services/store/network/native-client-socket.ts';
import type { ClientSink } from '../services/store/network/client-socket.ts';
import { destroyAll, track } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';
import { ConnectionTable } from '../services/store/network/connection-table.ts';
import { Secret } from '../services/shared/secret.ts';

afterEach(destroyAll);

const built = 'io' in loadSocketIo();
const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

/** A raw client that collects what it receives as text. */
async function rawClient(port: number, options: { allowHalfOpen?: boolean } = {}): Promise<{ socket: Socket; text: () => string }> {
  const socket = track(connect({ port, host: '127.0.0.1', ...options }));
  await once(socket, 'connect');
  let text = '';
  socket.setEncoding('latin1').on('data', (c: string) => (text += c));
  return { socket, text: () => text };
}

describe.skipIf(!built || process.platform !== 'linux')('native client sockets', () => {
  it('serve connections Node never wraps in a net.Socket, and close every descriptor they had', async () => {
    const store = await startTestStore({ nativeIo: 'on' });
    let wrapped = 0;
    store.service.server.server.on('connection', () => wrapped++);
    const before = openDescriptors();
    for (let round = 0; round < 3; round++) {
      const clients = await Promise.all(Array.from({ length: 30 }, () => store.client()));
      const replies = await Promise.all(clients.map((c, i) => c.request(`SET r${round}k${i} ${i}`).then(() => c.request(`GET r${round}k${i}`))));
      expect(replies).toEqual(clients.map((_, i) => `VALUE ${b64(String(i))}`));
      expect(store.service.server.connectionFlows().every((f) => f.nativeReads)).toBe(true);
      // Closed every way a client goes: FIN, reset, QUIT.
      clients.forEach((c, i) => (i % 3 === 0 ? c.socket.end() : i % 3 === 1 ? c.socket.resetAndDestroy() : c.send('QUIT\n')));
      await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
    }
    expect(wrapped).toBe(0);
    // The clients' own descriptors are in this process too: all closed by now.
    await vi.waitFor(() => expect(openDescriptors()).toBeLessThanOrEqual(before), { timeout: 10_000, interval: 10 });
  });

  it('queue what the kernel refuses and write it, in order and whole, once the client reads again', async () => {
    const store = await startTestStore({ nativeIo: 'on' });
    const value = 'v'.repeat(48 * 1024);
    const setter = await store.client();
    expect(await setter.request(`SET big ${value}`)).toBe('OK');
    const reader = await rawClient(store.port);
    reader.socket.pause(); // the kernel's buffers fill up
    const gets = 200;
    reader.socket.write(Array.from({ length: gets }, (_, i) => `GET big\nSET n${i} ${i}\nGET n${i}\n`).join(''));
    await vi.waitFor(() => expect(store.service.server.connectionFlows().some((f) => f.writableLength > 0 && f.paused)).toBe(true), { timeout: 10_000, interval: 5 });
    reader.socket.resume();
    const expected = Array.from({ length: gets }, (_, i) => `VALUE ${b64(value)}\nOK\nVALUE ${b64(String(i))}\n`).join('');
    await vi.waitFor(() => expect(reader.text().length).toBe(expected.length), { timeout: 10_000, interval: 10 });
    expect(reader.text() === expected).toBe(true);
    await vi.waitFor(() => expect(store.service.server.connectionFlows().every((f) => f.writableLength === 0 && !f.paused)).toBe(true), { timeout: 10_000, interval: 5 });
    // And the connection goes on serving.
    reader.socket.write('PING\n');
    await vi.waitFor(() => expect(reader.text().endsWith('PONG\n')).toBe(true), { timeout: 10_000, interval: 5 });
  });

  it("read every client ready in a turn into one buffer, one read after another, each client's lines answered whole and in order", async () => {
    const store = await startTestStore({ nativeIo: 'on' });
    const clients = await Promise.all(Array.from({ length: 30 }, () => rawClient(store.port)));
    const big = (i: number) => Array.from({ length: 1500 }, (_, j) => `SET big${i}-${j} ${'b'.repeat(60)}\n`).join(''); // ~100 KiB: more than one read
    const expected: string[] = [];
    // One synchronous loop: every client's bytes are with the kernel before the store's
    // next poll, which reads them all in one batch (the big ones hand the batch over early).
    clients.forEach((c, i) => {
      const kind = i % 4;
      if (kind === 0) {
        c.socket.write(`SET one${i} ${i}\n`); // a read of one command: held for the turn's end
        expected[i] = 'OK\n';
      } else if (kind === 1) {
        c.socket.write(`SET few${i} ${i}\nGET few${i}\nPING\n`);
        expected[i] = `OK\nVALUE ${b64(String(i))}\nPONG\n`;
      } else if (kind === 2) {
        c.socket.write(`SET part${i} ab`); // the rest of the line comes later
        expected[i] = `OK\nVALUE ${b64(`ab${i}`)}\n`;
      } else {
        c.socket.write(big(i));
        expected[i] = 'OK\n'.repeat(1500);
      }
    });
    clients.forEach((c, i) => {
      if (i % 4 === 2) c.socket.write(`${i}\nGET part${i}\n`);
    });
    await vi.waitFor(() => expect(clients.map((c) => c.text().length)).toEqual(expected.map((e) => e.length)), { timeout: 10_000, interval: 10 });
    expect(clients.map((c) => c.text())).toEqual(expected);
    const check = await store.client();
    expect(await check.request('GET one0')).toBe(`VALUE ${b64('0')}`);
    expect(await check.request('GET big3-1499')).toBe(`VALUE ${b64('b'.repeat(60))}`);
  });

  it('after QUIT send the reply and a FIN, and cut off a client that keeps its side open once the linger is over', async () => {
    const store = await startTestStore({ nativeIo: 'on' }, { lingerMs: 50 });
    const client = await rawClient(store.port, { allowHalfOpen: true });
    const ended = once(client.socket, 'end');
    client.socket.write('SET q 1\nQUIT\n');
    await ended; // the store's FIN; this side stays open
    expect(client.text()).toBe('OK\nBYE\n');
    // Then the store closes its descriptor (a connection is counted until its descriptor is closed).
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
    expect(client.socket.destroyed).toBe(false);
  });

  it("close an ended connection as soon as its client's FIN comes, without waiting out the linger", async () => {
    const store = await startTestStore({ nativeIo: 'on' }, { lingerMs: 600_000 });
    const client = await rawClient(store.port, { allowHalfOpen: true });
    const ended = once(client.socket, 'end');
    client.socket.write('QUIT\n');
    await ended;
    expect(store.service.server.connectionCount).toBe(1); // lingering: waiting for this side
    client.socket.end();
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
  });

  it('answer what a half-closed client sent, then end; and count a refused connection, told why, at MAX_CONNECTIONS', async () => {
    const store = await startTestStore({ nativeIo: 'on', maxConnections: 1 }, { lingerMs: 600_000 });
    const first = await rawClient(store.port, { allowHalfOpen: true });
    first.socket.write('PING\n');
    await vi.waitFor(() => expect(first.text()).toBe('PONG\n'), { timeout: 10_000, interval: 5 });
    const refused = await rawClient(store.port, { allowHalfOpen: true });
    await once(refused.socket, 'end');
    expect(refused.text()).toBe('ERROR max connections reached\n');
    refused.socket.end(); // its FIN closes it at once (the linger is ten minutes here)
    await once(refused.socket, 'close');
    const firstClosed = once(first.socket, 'close');
    first.socket.end('SET h 1\nGET h\n'); // half-close right after the lines
    await firstClosed;
    expect(first.text()).toBe(`PONG\nOK\nVALUE ${b64('1')}\n`);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_rejected_connections_total 1$/m);
  });

  it("serve a new connection with a closed one's objects, keeping nothing of it: its password, a partial line, its QUIT, its queued replies", async () => {
    const store = await startTestStore({ nativeIo: 'on', password: new Secret('secret-pw') });
    const server = store.service.server;
    const expectAuthRequired = async () => {
      const fresh = await store.client();
      expect(await fresh.request('GET k')).toBe('ERROR authentication required');
      fresh.destroy();
      await vi.waitFor(() => expect(server.connectionCount).toBe(0), { timeout: 10_000, interval: 5 });
    };
    // Authenticated, then closed by its client.
    const a = await store.client();
    expect(await a.request('AUTH secret-pw')).toBe('OK');
    expect(await a.request('SET k 1')).toBe('OK');
    a.destroy();
    await vi.waitFor(() => expect(server.connectionCount).toBe(0), { timeout: 10_000, interval: 5 });
    const reusedBefore = server.reusedConnections;
    await expectAuthRequired();
    expect(server.reusedConnections).toBeGreaterThan(reusedBefore);
    // A partial line, then closed: the next connection's first line is its own.
    const b = await store.client();
    expect(await b.request('AUTH secret-pw')).toBe('OK');
    b.send('SET partial');
    await vi.waitFor(() => expect(server.connectionFlows()[0]?.bytesRead).toBeGreaterThan(15), { timeout: 10_000, interval: 5 });
    b.destroy();
    await vi.waitFor(() => expect(server.connectionCount).toBe(0), { timeout: 10_000, interval: 5 });
    const c = await store.client();
    expect(await c.request('AUTH secret-pw')).toBe('OK');
    expect(await c.request('GET k')).toBe(`VALUE ${b64('1')}`);
    expect(server.connectionFlows()[0]).toMatchObject({ bytesRead: 'AUTH secret-pw\nGET k\n'.length, bytesWritten: 'OK\n'.length + `VALUE ${b64('1')}\n`.length });
    // QUIT with replies it never read queued, then reset.
    const d = await rawClient(store.port);
    d.socket.pause();
    d.socket.write(`AUTH secret-pw\nSET big ${'x'.repeat(60_000)}\n${'GET big\n'.repeat(300)}QUIT\n`);
    await vi.waitFor(() => expect(server.connectionFlows().some((f) => f.writableLength > 0)).toBe(true), { timeout: 10_000, interval: 5 });
    d.socket.resetAndDestroy();
    c.destroy();
    await vi.waitFor(() => expect(server.connectionCount).toBe(0), { timeout: 10_000, interval: 5 });
    await expectAuthRequired();
    const e = await store.client();
    expect(await e.request('AUTH secret-pw')).toBe('OK');
    expect(await e.request('PING')).toBe('PONG');
    expect(server.connectionFlows()).toMatchObject([{ writableLength: 0, paused: false }]);
    expect(server.reusedConnections).toBeGreaterThanOrEqual(reusedBefore + 4);
  });
});

describe.skipIf(!built || process.platform !== 'linux')('what the server keeps for reuse', () => {
  /** 20 clients, each pipelining 50 GETs of a 1 KB value at once, then closed. */
  async function busyThenClosed(store: Awaited<ReturnType<typeof startTestStore>>): Promise<void> {
    const setter = await store.client();
    expect(await setter.request(`SET v ${'x'.repeat(1000)}`)).toBe('OK');
    setter.destroy();
    const clients = await Promise.all(Array.from({ length: 20 }, () => rawClient(store.port)));
    const reply = `VALUE ${b64('x'.repeat(1000))}\n`;
    for (const c of clients) c.socket.write('GET v\n'.repeat(50));
    await vi.waitFor(() => expect(clients.every((c) => c.text().length === reply.length * 50)).toBe(true), { timeout: 10_000, interval: 5 });
    for (const c of clients) c.socket.destroy();
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 5 });
  }

  it('is let go of by releaseIdle: reply buffers, input copies and closed connections', async () => {
    const store = await startTestStore({ nativeIo: 'on' }, { idleTrimMs: 60_000 });
    await busyThenClosed(store);
    const server = store.service.server;
    expect(server.kept.replyBuffers).toBeGreaterThan(0);
    expect(server.kept.connections).toBeGreaterThan(0);
    server.releaseIdle();
    expect(server.kept).toEqual({ replyBuffers: 0, inputCopies: 0, connections: 0 });
    // And it serves on as before.
    const c = await store.client();
    expect(await c.request('GET v')).toBe(`VALUE ${b64('x'.repeat(1000))}`);
  });

  it('is let go of once the store stands idle', async () => {
    const store = await startTestStore({ nativeIo: 'on' }, { idleTrimMs: 50 });
    await busyThenClosed(store);
    await vi.waitFor(() => expect(store.service.server.kept).toEqual({ replyBuffers: 0, inputCopies: 0, connections: 0 }), { timeout: 10_000, interval: 20 });
  });
});

describe('ConnectionTable', () => {
  it('adds and removes in any order, each item knowing its slot, and goes through a copy', () => {
    const table = new ConnectionTable<{ name: string; tableSlot: number }>();
    const items = ['a', 'b', 'c', 'd'].map((name) => ({ name, tableSlot: -1 }));
    for (const item of items) table.add(item);
    table.add(items[0]!); // already in: no second slot
    expect(table.size).toBe(4);
    expect(table.remove(items[1]!)).toBe(true);
    expect(table.remove(items[1]!)).toBe(false);
    expect(items[1]!.tableSlot).toBe(-1);
    const seen = table.values();
    for (const item of seen) table.remove(item); // removing while going through the copy
    expect(seen.map((i) => i.name).sort()).toEqual(['a', 'c', 'd']);
    expect(table.size).toBe(0);
    expect(items.every((i) => i.tableSlot === -1)).toBe(true);
    table.add(items[2]!);
    expect(table.values()).toEqual([items[2]]);
  });
});

describe("the poller's batch, as NativeClients hands it out", () => {
  /** An add-on stand-in: the test plays the poller, filling the batch and calling onEvents itself. */
  function fakeIo() {
    const calls: string[] = [];
    let onEvents: (count: number) => void = () => {};
    let events: Int32Array = new Int32Array(0);
    const io = {
      eventsPerBatch: 8,
      createPoller: (_buffer: Buffer, e: Int32Array, on: (count: number) => void) => ((events = e), (onEvents = on), {}),
      watch: (_p: unknown, fd: number) => (calls.push(`watch ${fd}`), 0),
      unwatch: (_p: unknown, fd: number) => void calls.push(`unwatch ${fd}`),
      watchWrites: (_p: unknown, fd: number, _id: number, on: boolean) => (calls.push(`watchWrites ${fd} ${on}`), 0),
      forget: (_p: unknown, fd: number) => void calls.push(`forget ${fd}`),
      shutdownWrite: () => 0,
      closePoller: () => {},
      writeRange: () => -11, // EAGAIN: every reply is queued
    };
    /** Hands over the batch (id, start, n) triples. */
    const poll = (...batch: [number, number, number][]) => {
      batch.forEach((e, i) => events.set(e, i * EVENT_FIELDS));
      onEvents(batch.length);
    };
    return { io: io as unknown as SocketIo, calls, poll };
  }
  const handle = (fd: number): TcpHandle => ({ fd, setNoDelay: () => 0, getpeername: () => -1, close: () => {} });
  function recordingSink(name: string, heard: string[]): ClientSink {
    return {
      receive: (buf, start, end) => void heard.push(`${name} ${buf.toString('latin1', start, end)}`),
      drained: () => void heard.push(`${name} drained`),
      inputEnded: () => void heard.push(`${name} ended`),
    };
  }

  it('gives each read its own range of the buffer, skips a socket closed by an earlier event, and a writable event finding nothing queued does nothing', () => {
    const { io, calls, poll } = fakeIo();
    const failed: string[] = [];
    const clients = new NativeClients(io, { closed: () => {}, failed: (_c, err) => void failed.push(err.message) });
    const heard: string[] = [];
    const [a, b, c] = [10, 11, 12].map((fd) => clients.adopt(handle(fd))!);
    a!.serve(recordingSink('a', heard));
    b!.serve(recordingSink('b', heard));
    c!.serve(recordingSink('c', heard));
    clients.buffer.write('PING\nGET k\n', 0, 'latin1');
    // a's read, b's read after it in the buffer, c's reset, then c's and a's writable events.
    poll([0, 0, 5], [1, 5, 6], [2, 0, -104], [2, -1, 0], [0, -1, 0]);
    expect(heard).toEqual(['a PING\n', 'b GET k\n']);
    expect(failed).toEqual(['read ECONNRESET']);
    expect(c!.destroyed).toBe(true);
    expect(calls.filter((call) => call.startsWith('watchWrites'))).toEqual([]); // nothing was queued: a's writable event did nothing
    // A reply the kernel refuses waits in the socket until its writable event.
    a!.queue(Buffer.from('PONG\n'), 0, 5);
    expect(calls.at(-1)).toBe('watchWrites 10 true');
    poll([0, -1, 0]); // still refused (writeRange says EAGAIN): stays queued, still watched
    expect(a!.writableLength).toBe(5);
    expect(heard).toEqual(['a PING\n', 'b GET k\n']);
  });
});
