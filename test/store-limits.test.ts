import { afterEach, describe, expect, it, vi } from 'vitest';
import { GET } from '../services/protocol/command-parser.ts';
import { RESULT_OK } from '../services/store/store-metrics.ts';
import { REPLY_BOUND_BYTES } from '../services/store/network/served-connection.ts';
import { sweepPeriodMs } from '../services/store/network/tcp-server.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { LineClient, nonReader } from './helpers/line-client.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

afterEach(destroyAll);

describe('MAX_CONNECTIONS', () => {
  it('refuses the connection past the limit with `ERROR max connections reached`, counts it, and accepts again once one closes', async () => {
    const store = await startTestStore({ maxConnections: 2 });
    const a = await store.client();
    const b = await store.client();
    expect(await a.request('PING')).toBe('PONG');
    expect(await b.request('PING')).toBe('PONG');
    const c = await store.client();
    await c.closed;
    expect(c.received).toEqual(['ERROR max connections reached']);
    expect(store.service.metrics.rejectedConnections).toBe(1);
    expect(store.service.metrics.connectionsTotal).toBe(2);
    expect(store.logs.filter((l) => l.msg === 'max connections reached: refusing a connection')).toHaveLength(1);

    a.destroy();
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(1), { interval: 5 });
    const d = await store.client();
    expect(await d.request('PING')).toBe('PONG');
  });
});

describe('IDLE_TIMEOUT_MS', () => {
  it('closes an idle connection without a message', async () => {
    const store = await startTestStore({ idleTimeoutMs: 50 });
    const c = await store.client();
    expect(await c.request('PING')).toBe('PONG');
    await c.closed;
    expect(c.received).toEqual(['PONG']);
    expect(c.error).toBeUndefined();
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { interval: 5 });
  });

  it('activity keeps a connection open; it is closed once idle for the time-out, not before', async () => {
    const idleTimeoutMs = 150;
    const store = await startTestStore({ idleTimeoutMs });
    const active = await store.client();
    const idle = await store.client();
    expect(await idle.request('PING')).toBe('PONG');
    const idleSince = performance.now();
    // The active client sends a command every third of the time-out, for three time-outs.
    const activeUntil = performance.now() + 3 * idleTimeoutMs;
    while (performance.now() < activeUntil) {
      expect(await active.request('PING')).toBe('PONG');
      await new Promise((r) => setTimeout(r, idleTimeoutMs / 3));
    }
    await idle.closed;
    // Closed by the sweep, never before the time-out (how late depends on the sweep's period and on scheduling).
    expect(performance.now() - idleSince).toBeGreaterThanOrEqual(idleTimeoutMs);
    expect(active.error).toBeUndefined();
    expect(await active.request('PING')).toBe('PONG');
  });

  it('the sweep runs every quarter of the shorter time-out, at least once a second, never more than once a millisecond', () => {
    expect(sweepPeriodMs(0, 0)).toBeUndefined();
    expect(sweepPeriodMs(300_000, 30_000)).toBe(1000);
    expect(sweepPeriodMs(50, 0)).toBe(12.5);
    expect(sweepPeriodMs(0, 2000)).toBe(500);
    expect(sweepPeriodMs(400, 2000)).toBe(100);
    expect(sweepPeriodMs(2, 0)).toBe(1);
  });

  it('0 means connections have no idle time-out', async () => {
    const store = await startTestStore({ idleTimeoutMs: 0 });
    const c = await store.client();
    expect(await c.request('PING')).toBe('PONG');
    expect(store.service.server.connectionFlows()).toMatchObject([{ idleTimeoutMs: 0 }]);
    const other = await startTestStore({ idleTimeoutMs: 60_000 });
    const d = await other.client();
    expect(await d.request('PING')).toBe('PONG');
    expect(other.service.server.connectionFlows()).toMatchObject([{ idleTimeoutMs: 60_000 }]);
  });
});

describe('MAX_MEMORY_BYTES', () => {
  const value = 'v'.repeat(20); // with a 2-byte key: 22 bytes per entry

  it('lru: evicts the least recently used keys and never passes the cap', async () => {
    const store = await startTestStore({ maxMemoryBytes: 100, evictionPolicy: 'lru' });
    const c = await store.client();
    for (const k of ['k0', 'k1', 'k2', 'k3']) expect(await c.request(`SET ${k} ${value}`)).toBe('OK');
    expect(await c.request('USAGE')).toBe('USAGE 88');
    expect(await c.request('GET k0')).toBe(`VALUE ${b64(value)}`); // k1 is now the least recently used
    expect(await c.request(`SET k4 ${value}`)).toBe('OK');
    expect(await c.request('USAGE')).toBe('USAGE 88');
    expect(await c.request('GET k1')).toBe('NOT_FOUND');
    expect(await c.request('GET k0')).toBe(`VALUE ${b64(value)}`);
    for (let i = 5; i < 50; i++) {
      expect(await c.request(`SET k${i} ${'w'.repeat(i)}`)).toBe('OK');
      const usage = Number((await c.request('USAGE')).slice(6));
      expect(usage).toBeLessThanOrEqual(100);
    }
    expect(store.service.engine.evictions).toBeGreaterThan(0);
    expect(await c.request(`SET huge ${'x'.repeat(99)}`)).toBe('ERROR out of memory');
    expect(await c.request('GET huge')).toBe('NOT_FOUND');
  });

  it('noeviction: a SET that would pass the cap fails with `ERROR out of memory` and changes nothing', async () => {
    const store = await startTestStore({ maxMemoryBytes: 100, evictionPolicy: 'noeviction' });
    const c = await store.client();
    for (const k of ['k0', 'k1', 'k2', 'k3']) expect(await c.request(`SET ${k} ${value}`)).toBe('OK');
    expect(await c.request(`SET k4 ${value}`)).toBe('ERROR out of memory');
    expect(await c.request('GET k4')).toBe('NOT_FOUND');
    expect(await c.request('USAGE')).toBe('USAGE 88');
    // An overwrite counts new size minus old: +12 fits, +13 does not.
    expect(await c.request(`SET k1 ${value}${'+'.repeat(12)}`)).toBe('OK');
    expect(await c.request(`SET k2 ${value}${'+'.repeat(13)}`)).toBe('ERROR out of memory');
    expect(await c.request('GET k2')).toBe(`VALUE ${b64(value)}`);
    expect(await c.request('USAGE')).toBe('USAGE 100');
    expect(await c.request(`SETEX k5 10 x`)).toBe('ERROR out of memory');
    expect(await c.request('DELETE k0')).toBe('OK');
    expect(await c.request(`SET k5 ${value}`)).toBe('OK');
    expect(store.service.engine.evictions).toBe(0);
  });
});

describe('MAX_VALUE_BYTES', () => {
  it('sets the value limit and, with it, the line bound', async () => {
    const store = await startTestStore({ maxValueBytes: 100 }); // bound: 612 bytes
    const c = await store.client();
    expect(await c.request(`SET k ${'a'.repeat(100)}`)).toBe('OK');
    expect(await c.request(`SET k ${'a'.repeat(101)}`)).toBe('ERROR value too large');
    expect(await c.request(`SET k ${'a'.repeat(606)}`)).toBe('ERROR value too large'); // 612 bytes
    expect(await c.request(`SET k ${'a'.repeat(607)}`)).toBe('ERROR line too long');
    await c.closed;
  });

  it('the default allows a value of 1 MiB', async () => {
    const store = await startTestStore();
    const c = await store.client();
    const big = Buffer.alloc(1024 * 1024, 0x62);
    expect(await c.request(Buffer.concat([Buffer.from('SET big '), big]))).toBe('OK');
    expect(await c.request('GET big')).toBe(`VALUE ${big.toString('base64')}`);
    expect(await c.request(Buffer.concat([Buffer.from('SET big '), big, Buffer.from('b')]))).toBe('ERROR value too large');
  });
});

describe('backpressure', () => {

  const gets = (store: { service: { metrics: { commands: Float64Array } } }) => store.service.metrics.commands[GET * 3 + RESULT_OK]!;

  it('a client that pipelines without reading makes the server pause that socket, with bounded buffering', async () => {
    const store = await startTestStore();
    const setup = await store.client();
    const value = 'x'.repeat(10_000); // each GET reply is ~13 KB: 5,000 of them ~67 MB
    expect(await setup.request(`SET big ${value}`)).toBe('OK');

    const slow = await nonReader(store.port);
    slow.write('GET big\n'.repeat(5000));
    // Paused with the reply bound queued in the socket: the kernel buffers are full, and only
    // the client reading can change that. (With less queued the connection still has room,
    // and runs more of its commands in the turns to come.)
    const stuck = () => store.service.server.connectionFlows().find((f) => f.paused && f.writableLength >= REPLY_BOUND_BYTES);
    await vi.waitFor(() => expect(stuck()).toBeDefined(), { timeout: 10_000, interval: 5 });
    const flow = () => stuck()!;
    const answered = gets(store);
    expect(answered).toBeLessThan(5000);
    // One early flush (64 KiB) plus one reply, not megabytes of queued replies.
    expect(flow().writableLength).toBeLessThan(256 * 1024);

    // Other clients are served meanwhile, and the stuck one does not advance.
    for (let i = 0; i < 20; i++) expect(await setup.request('PING')).toBe('PONG');
    expect(gets(store)).toBe(answered);
    expect(flow().writableLength).toBeLessThan(256 * 1024);
  });

  it('a client that half-closes while the server is paused still gets every reply', async () => {
    const store = await startTestStore();
    const setup = await store.client();
    const value = 'h'.repeat(10_000);
    expect(await setup.request(`SET big ${value}`)).toBe('OK');
    const c = await LineClient.connect(store.port);
    c.socket.pause();
    c.socket.end('GET big\n'.repeat(2000));
    await vi.waitFor(() => expect(store.service.server.connectionFlows().some((f) => f.paused && f.writableLength > 0)).toBe(true), { timeout: 10_000, interval: 5 });
    c.socket.resume();
    await c.closed;
    expect(c.error).toBeUndefined();
    expect(c.received).toHaveLength(2000);
    expect(new Set(c.received)).toEqual(new Set([`VALUE ${b64(value)}`]));
  });

  it('resumes when the client reads, and every reply arrives in order', async () => {
    const store = await startTestStore();
    const setup = await store.client();
    const value = 'y'.repeat(10_000);
    expect(await setup.request(`SET big ${value}`)).toBe('OK');
    const c = await LineClient.connect(store.port);
    c.socket.pause();
    const n = 3000;
    c.send('GET big\nPING\n'.repeat(n / 2) + 'USAGE\n');
    await vi.waitFor(() => expect(store.service.server.connectionFlows().some((f) => f.paused)), { timeout: 10_000, interval: 5 });
    expect(gets(store)).toBeLessThan(n / 2);
    c.socket.resume();
    const lines = await c.lines(n + 1);
    const expected = `VALUE ${b64(value)}`;
    for (let i = 0; i < n; i++) if (lines[i] !== (i % 2 ? 'PONG' : expected)) throw new Error(`reply ${i} is wrong: ${lines[i]!.slice(0, 40)}`);
    expect(lines[n]).toBe(`USAGE ${3 + value.length}`);
    await vi.waitFor(() => expect(store.service.server.connectionFlows().every((f) => !f.paused)), { interval: 5 });
  });
});
