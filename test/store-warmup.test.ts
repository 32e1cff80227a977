import { afterEach, describe, expect, it, vi } from 'vitest';
import { lineBound } from '../services/protocol/limits.ts';
import { createLogger } from '../services/shared/logger.ts';
import { ONE_AT_A_TIME_KEYS, warmupCommands, warmUpCommandPath, type WarmupOptions } from '../services/store/runtime/code-warmup.ts';
import { THIS_THREAD_PAGES, type PageSource } from '../services/store/engine/page-source.ts';
import { OneLineReads } from '../services/store/network/one-line-reads.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { metricSum } from '../bench/harness/exposition.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

afterEach(destroyAll);

const logger = createLogger({ name: 'kvstore', level: 'silent' });
const options = (keys: number, more: Partial<WarmupOptions> = {}): WarmupOptions => ({
  keys,
  maxMemoryBytes: 64 * 1024 * 1024,
  evictionPolicy: 'lru',
  maxValueBytes: 1024,
  maxLineBytes: lineBound(1024),
  logger,
  ...more,
});

/** Open TCP servers and sockets of this process, by kind. */
function tcpHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap' || r === 'TCPSocketWrap').length;
}

/** Waits until the sockets and listeners closed by the warm-up are gone (their handles close asynchronously). */
const untilHandles = (count: number): Promise<true> =>
  waitUntil(`${count} open TCP handles`, async () => (tcpHandles() === count ? true : undefined), { deadlineMs: 5000, everyMs: 5 });

describe('the start-up warm-up', () => {
  it('has a scratch store answer every SET, GET and DELETE, and the SETs and GETs again, and leaves no listener or socket behind', async () => {
    const before = tcpHandles();
    const hold = vi.spyOn(OneLineReads.prototype, 'hold');
    const result = await warmUpCommandPath(options(1001, { maxValueBytes: 50 }));
    expect(result.error).toBeUndefined();
    expect(result.commands).toBe(warmupCommands(1001));
    expect(warmupCommands(1001)).toBe(5 * 1001 + ONE_AT_A_TIME_KEYS);
    // The GETs sent one at a time took the path of a one-command read (held to the turn's end).
    expect(hold.mock.calls.length).toBeGreaterThanOrEqual(ONE_AT_A_TIME_KEYS);
    hold.mockRestore();
    expect(result.ms).toBeGreaterThan(0);
    await untilHandles(before);
    expect(tcpHandles()).toBe(before);
  });

  it('takes the scratch engine\'s pages from the page source it is given, the real engine\'s', async () => {
    const before = tcpHandles();
    const sizes: number[] = [];
    const counting: PageSource = { alloc: (bytes, again) => (sizes.push(bytes), THIS_THREAD_PAGES.alloc(bytes, again)), close: async () => {} };
    const result = await warmUpCommandPath(options(1001, { pageSource: counting }));
    expect(result.error).toBeUndefined();
    expect(sizes.length).toBeGreaterThan(0);
    await untilHandles(before);
  });

  it('0 keys: no warm-up at all', async () => {
    expect(await warmUpCommandPath(options(0))).toEqual({ commands: 0, ms: 0 });
  });

  it('reports a failure instead of throwing (an address it cannot bind), and leaves nothing open', async () => {
    const before = tcpHandles();
    const result = await warmUpCommandPath(options(100, { host: '192.0.2.1' })); // TEST-NET-1: not on this host
    expect(result.commands).toBe(0);
    expect(result.error).toMatch(/EADDRNOTAVAIL|EINVAL|listen/);
    await untilHandles(before);
    expect(tcpHandles()).toBe(before);
  });

  it('gives up at its time-out, reporting how far it got, and leaves nothing open', async () => {
    const before = tcpHandles();
    const result = await warmUpCommandPath(options(1_000_000, { timeoutMs: 20 }));
    expect(result.error).toBe('timed out after 20 ms');
    expect(result.commands).toBeLessThan(warmupCommands(1_000_000));
    await untilHandles(before);
    expect(tcpHandles()).toBe(before);
  });

  it('a warmed store starts empty, with its counters and metrics untouched, and says so in its ready line', async () => {
    const store = await startTestStore({ warmupKeys: 500 });
    const ready = store.logs.find((l) => l.msg === STORE_READY)!;
    expect(ready).toMatchObject({ warmupCommands: warmupCommands(500), keys: 0 });
    expect(ready.warmupMs).toBeGreaterThanOrEqual(0);
    const metrics = (await store.admin('/metrics')).body;
    for (const command of ['SET', 'GET', 'DELETE']) expect(metricSum(metrics, 'kvstore_commands_total', `command="${command}"`)).toBe(0);
    expect(metricSum(metrics, 'kvstore_keys')).toBe(0);
    const client = await store.client();
    const stats = await client.request('STATS');
    expect(stats).toMatch(/\bkeys=0\b/);
    expect(stats).toMatch(/\bhits=0\b/);
    expect(stats).toMatch(/\bmisses=0\b/);
    expect(stats).toMatch(/\bevictions=0\b/);
    expect(await client.request('GET warmup:1')).toBe('NOT_FOUND');
    // The counter read above is the one the store keeps: this store's own GET shows in it.
    expect(metricSum((await store.admin('/metrics')).body, 'kvstore_commands_total', 'command="GET"')).toBe(1);
  });

  it('is off unless asked for in the tests (the loader\'s default is on)', async () => {
    const store = await startTestStore();
    expect(store.logs.find((l) => l.msg === STORE_READY)).toMatchObject({ warmupCommands: 0, warmupMs: 0 });
  });
});
