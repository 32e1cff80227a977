// Many clients that pipeline without reading, against the real store server (in-process,
// port 0): the bounds on what the store produces for each of them, the per-turn budget
// that keeps them from starving the others, and the cut-off of a client that never reads.
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GET } from '../services/protocol/command-parser.ts';
import { CLOCK_CHECK_LINES, COMMANDS_PER_TURN, REPLY_BOUND_BYTES } from '../services/store/network/served-connection.ts';
import { COMMAND_BUDGET, REPLY_BOUND, RESULT_OK, TIME_SLICE, TURN_BUDGET } from '../services/store/store-metrics.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { LineClient, nonReader } from './helpers/line-client.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

afterEach(destroyAll);


/** The largest a Linux socket's send plus receive buffers may grow (both ends of one connection); 64 MiB elsewhere. */
function kernelBufferBound(): number {
  const max = (f: string) => Number(readFileSync(f, 'utf8').trim().split(/\s+/)[2]);
  const wmem = '/proc/sys/net/ipv4/tcp_wmem';
  const rmem = '/proc/sys/net/ipv4/tcp_rmem';
  return existsSync(wmem) && existsSync(rmem) ? max(wmem) + max(rmem) : 64 * 1024 * 1024;
}

const okGets = (store: TestStore) => store.service.metrics.commands[GET * 3 + RESULT_OK]!;

describe('many clients that pipeline GETs of a 1 KB value and never read', () => {
  it('each costs the store at most the reply bound plus one reply, and another client is answered throughout', async () => {
    const store = await startTestStore();
    const probe = await store.client();
    const value = 'v'.repeat(1024);
    const reply = `VALUE ${b64(value)}\n`.length;
    expect(await probe.request(`SET one-kb ${value}`)).toBe('OK');

    const flooders = 100;
    const getsEach = 4000; // 24 KB of commands asking for 5.6 MB of replies, each
    const burst = Buffer.from('GET one-kb\n'.repeat(getsEach));
    const sockets = await Promise.all(Array.from({ length: flooders }, () => nonReader(store.port)));
    for (const s of sockets) s.write(burst);

    // While they flood, every PING is answered; and the flood went on after the first answer.
    const answeredAt: number[] = [];
    for (let i = 0; i < 30; i++) {
      expect(await probe.request('PING')).toBe('PONG');
      expect(await probe.request('USAGE')).toBe(`USAGE ${'one-kb'.length + value.length}`);
      answeredAt.push(okGets(store));
    }
    expect(answeredAt[0]!).toBeLessThan(flooders * getsEach);

    // Every flooder ends up paused with its socket full; the store holds at most the bound
    // plus one reply for each, and has produced no more for one than the kernel can hold.
    const flows = () => store.service.server.connectionFlows().filter((f) => f.bytesRead > 0 && f.bytesWritten > reply);
    await vi.waitFor(() => expect(flows().filter((f) => f.paused && f.writableLength > 0)).toHaveLength(flooders), { timeout: 30_000, interval: 20 });
    for (const f of flows()) {
      expect(f.writableLength).toBeLessThan(REPLY_BOUND_BYTES + reply);
      expect(f.bytesWritten).toBeLessThan(kernelBufferBound() + REPLY_BOUND_BYTES + reply);
    }
    expect(okGets(store)).toBeLessThan(flooders * getsEach);
    expect(store.service.metrics.connectionYields[REPLY_BOUND]).toBeGreaterThan(0);
    const metrics = (await store.admin('/metrics')).body;
    expect(metrics).toMatch(/^kvstore_connection_yields_total\{reason="reply_bound"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^kvstore_output_limit_disconnects_total 0$/m);
    expect(await probe.request('PING')).toBe('PONG');
  });

  it('a client whose socket stays full past OUTPUT_STALL_TIMEOUT_MS is closed, counted and logged once; a client that reads is not', async () => {
    const store = await startTestStore({ outputStallTimeoutMs: 200 });
    const setup = await store.client();
    const value = 'x'.repeat(16_000);
    expect(await setup.request(`SET big ${value}`)).toBe('OK');
    const stalled = 5;
    const sockets = await Promise.all(Array.from({ length: stalled }, () => nonReader(store.port)));
    for (const s of sockets) s.write('GET big\n'.repeat(2000));

    // A client that takes its replies as they come is never cut off, however much it asks.
    const reader = await store.client();
    reader.send('GET big\n'.repeat(2000));
    const replies = await reader.lines(2000);
    expect(replies.every((r) => r === `VALUE ${b64(value)}`)).toBe(true);

    // (The non-readers themselves notice nothing until they read: the store's side is gone.)
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(2), { timeout: 10_000, interval: 20 });
    expect(store.service.metrics.outputLimitDisconnects).toBe(stalled);
    expect((await store.admin('/metrics')).body).toMatch(new RegExp(`^kvstore_output_limit_disconnects_total ${stalled}$`, 'm'));
    const logged = store.logs.filter((l) => l.msg === 'client takes none of its replies: closing the connection');
    expect(logged).toHaveLength(stalled);
    expect(logged[0]).toMatchObject({ unsentBytes: expect.any(Number), stalledMs: expect.any(Number) });
    expect(await reader.request('PING')).toBe('PONG');
    expect(await setup.request('PING')).toBe('PONG');
  });

  it('OUTPUT_STALL_TIMEOUT_MS=0 never closes a client for not reading', async () => {
    const store = await startTestStore({ outputStallTimeoutMs: 0 });
    const setup = await store.client();
    expect(await setup.request(`SET big ${'y'.repeat(16_000)}`)).toBe('OK');
    const s = await nonReader(store.port);
    s.write('GET big\n'.repeat(2000));
    await vi.waitFor(() => expect(store.service.server.connectionFlows().some((f) => f.paused && f.writableLength > 0)).toBe(true), { timeout: 10_000, interval: 20 });
    // Many more PING round trips than a short stall time-out would allow for.
    for (let i = 0; i < 200; i++) expect(await setup.request('PING')).toBe('PONG');
    expect(s.destroyed).toBe(false);
    expect(store.service.server.connectionCount).toBe(2);
    expect(store.service.metrics.outputLimitDisconnects).toBe(0);
  });
});

/**
 * `flood` pipelines n PINGs in one write; once the store has yielded for `reason` (it has
 * read some of the flood, so the flood is held back by the budget, not by the order of
 * arrival), `other`'s PING is answered before the flood is, and the flood loses nothing.
 */
async function floodPastAnother(store: TestStore, flood: LineClient, other: LineClient, n: number, reason: number): Promise<void> {
  flood.send('PING\n'.repeat(n));
  await vi.waitFor(() => expect(store.service.metrics.connectionYields[reason]).toBeGreaterThan(0), { interval: 1 });
  expect(await other.request('PING')).toBe('PONG');
  expect(flood.received.length).toBeLessThan(n);
  const all = await flood.lines(n);
  expect(all.every((r) => r === 'PONG')).toBe(true);
}

describe('the per-turn command budget', () => {
  it('a client pipelining 10,000 PINGs in one write yields to another client, whose PING is answered before the flood is', async () => {
    // No time budget: the yields counted here are the command count's (the next test covers time).
    const store = await startTestStore({}, { turnSliceMs: Infinity, turnBudgetMs: Infinity });
    const flood = await store.client();
    const other = await store.client();
    expect(await other.request('PING')).toBe('PONG');
    const n = 10_000;
    await floodPastAnother(store, flood, other, n, COMMAND_BUDGET);
    expect(store.service.metrics.connectionYields[COMMAND_BUDGET]).toBeGreaterThanOrEqual(Math.floor(n / COMMANDS_PER_TURN) - 1);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_connection_yields_total\{reason="command_budget"\} [1-9]\d*$/m);
  });

  it('a turn is bounded in time too: with no time to spend, a pipelining client yields at every clock check (16 commands), loses none, and another client is answered in between', async () => {
    const store = await startTestStore({}, { turnSliceMs: 0 });
    const flood = await store.client();
    const other = await store.client();
    const n = 4000;
    await floodPastAnother(store, flood, other, n, TIME_SLICE);
    // Yields on time, never on the command count (CLOCK_CHECK_LINES < COMMANDS_PER_TURN).
    expect(store.service.metrics.connectionYields[TIME_SLICE]).toBeGreaterThanOrEqual(Math.floor(n / CLOCK_CHECK_LINES) - 1);
    expect(store.service.metrics.connectionYields[COMMAND_BUDGET]).toBe(0);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_connection_yields_total\{reason="time_slice"\} [1-9]\d*$/m);
    // At depth 1 the clock is never read, so nothing yields.
    const quiet = await startTestStore({}, { turnSliceMs: 0 });
    const c = await quiet.client();
    for (let i = 0; i < 50; i++) expect(await c.request('PING')).toBe('PONG');
    expect(quiet.service.metrics.connectionYields[TIME_SLICE]).toBe(0);
  });

  it('with no time for pipelined work in a turn, clients pipelining at once wait in line for their turns: none loses a reply or gets one out of order, and a client sending one command at a time is answered before they are done', async () => {
    const store = await startTestStore({}, { turnBudgetMs: 0 });
    const other = await store.client();
    const floods = await Promise.all(Array.from({ length: 4 }, () => LineClient.connect(store.port)));
    const n = 3000;
    floods.forEach((c, i) => c.send(Array.from({ length: n / 2 }, (_, j) => `SET f${i}-${j} ${j}\nGET f${i}-${j}\n`).join('')));
    await vi.waitFor(() => expect(store.service.metrics.connectionYields[TURN_BUDGET]).toBeGreaterThan(0), { interval: 1 });
    expect(await other.request('PING')).toBe('PONG');
    expect(floods.some((c) => c.received.length < n)).toBe(true);
    const replies = await Promise.all(floods.map((c) => c.lines(n)));
    for (const lines of replies) expect(lines).toEqual(Array.from({ length: n / 2 }, (_, j) => ['OK', `VALUE ${b64(String(j))}`]).flat());
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_connection_yields_total\{reason="turn_budget"\} [1-9]\d*$/m);
  });

  it('replies of many turns arrive whole and in order for a client that reads (pipelined mixed commands)', async () => {
    const store = await startTestStore();
    const c = await LineClient.connect(store.port);
    const n = 3 * COMMANDS_PER_TURN + 7;
    const lines: string[] = [];
    const expected: string[] = [];
    for (let i = 0; i < n; i++) {
      lines.push(`SET k${i} ${'z'.repeat(i % 50)}`, `GET k${i}`);
      expected.push('OK', `VALUE ${b64('z'.repeat(i % 50))}`);
    }
    c.send(lines.join('\n') + '\n');
    expect(await c.lines(2 * n)).toEqual(expected);
  });
});
