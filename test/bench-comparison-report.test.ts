import { describe, expect, it } from 'vitest';
import type { StoreRun } from '../bench/harness/processes.ts';
import { quietRounds, quietStealBudgetMs, renderReport, roundRatios, type DepthRuns } from '../bench/comparison-report.ts';
import type { Settings } from '../bench/bench-settings.ts';

const run = (opsPerSec: number): StoreRun =>
  ({ command: 'kvload', result: { opsPerSec, errors: 0, wrongReplies: 0, latencyMs: { p50: 1, p99: 2, p999: 3 } } }) as unknown as StoreRun;

const settings = { duration: 3, rounds: 3, warmup: 1, connections: 50, keyspace: 100_000, valueSize: 100, memoryKeys: 0, threads: 1, kvload: 'kvload', redis: true, http: false, jsonFile: undefined } satisfies Settings;

describe('bench report: kvstack against Redis round by round', () => {
  // Round 2 was a bad stretch for kvstack, round 3 for Redis: the medians of each system
  // (200 and 200) would say 1.00x, the rounds' own ratios say 0.5, 1.25 and 2.
  const depth: DepthRuns = { depth: 16, kvstack: [run(100), run(200), run(400)], redis: [run(200), run(160), run(200)] };

  it('takes the median and range of each round’s ratio', () => {
    const r = roundRatios(depth)!;
    expect(r.each).toEqual([0.5, 1.25, 2]);
    expect(r).toMatchObject({ median: 1.25, min: 0.5, max: 2 });
  });

  it('has no ratio without Redis runs, or where a Redis run did nothing', () => {
    expect(roundRatios({ depth: 1, kvstack: [run(100)], redis: [] })).toBeUndefined();
    expect(roundRatios({ depth: 1, kvstack: [run(100), run(100)], redis: [run(0), run(50)] })!.each).toEqual([2]);
  });

  it('prints the paired median beside the ratio of the medians', () => {
    const text = renderReport({ settings, cpus: 2, client: 'kvload', depths: [depth], memory: undefined, http: undefined, commands: [] });
    expect(text).toMatch(/depth 16: ops\/s +200 +200 +1\.00x/);
    expect(text).toMatch(/depth 16: ops\/s, median of the rounds' ratios +1\.25x \(0\.50-2\.00\)/);
  });

  it('says whether the store\'s client sockets went through its C add-on', () => {
    const report = (storeNativeIo: boolean | undefined) => renderReport({ settings, cpus: 2, client: 'kvload', depths: [depth], memory: undefined, http: undefined, commands: [], storeNativeIo });
    expect(report(true)).toContain("The store's client sockets went through its C add-on (STORE_NATIVE_IO).");
    expect(report(false)).toContain("The store's client sockets went through Node's socket I/O");
    expect(report(undefined)).not.toContain('client sockets went through');
  });

  it('leaves the paired row out with a single round', () => {
    const text = renderReport({ settings: { ...settings, rounds: 1 }, cpus: 2, client: 'kvload', depths: [{ depth: 1, kvstack: [run(90)], redis: [run(100)] }], memory: undefined, http: undefined, commands: [] });
    expect(text).toMatch(/depth 1: ops\/s +90 +100 +0\.90x/);
    expect(text).not.toMatch(/median of the rounds' ratios +\d/);
  });
});

describe('bench report: the quiet rounds', () => {
  const stolen = (opsPerSec: number, stealMs: number | undefined, serverCpuUsPerOp = 2): StoreRun => ({ ...run(opsPerSec), stealMs, serverCpuUsPerOp });
  // 2 CPUs, 3-s runs: a budget of 90 ms. Round 2's kvstack run and round 3's Redis run were
  // stolen from; those rounds go, whichever system came out ahead in them.
  const depth: DepthRuns = {
    depth: 16,
    kvstack: [stolen(100, 10, 2.0), stolen(50, 400, 3.0), stolen(300, 0, 1.0), stolen(90, 90, 2.2)],
    redis: [stolen(100, 20, 1.8), stolen(100, 0, 1.9), stolen(100, 500, 3.5), stolen(100, 30, 2.0)],
  };

  it('keeps the rounds in which neither run had more steal than the budget', () => {
    expect(quietStealBudgetMs(2, 3)).toBeCloseTo(90);
    const quiet = quietRounds(depth, quietStealBudgetMs(2, 3));
    expect(quiet.kvstack.map((x) => x.result.opsPerSec)).toEqual([100, 90]);
    expect(quiet.redis.map((x) => x.stealMs)).toEqual([20, 30]);
    expect(roundRatios(quiet)!.each).toEqual([1, 0.9]);
  });

  it('counts no round as quiet without steal figures', () => {
    expect(quietRounds({ depth: 1, kvstack: [stolen(1, undefined)], redis: [stolen(1, 0)] }, 90).redis).toEqual([]);
  });

  it('prints their ratio and CPU per operation beside the figures of every round', () => {
    const text = renderReport({ settings, cpus: 2, client: 'kvload', depths: [depth], memory: undefined, http: undefined, commands: [] });
    expect(text).toMatch(/depth 16: ops\/s, quiet rounds' ratios \(2 of 4 rounds\) +0\.90x \(0\.90-1\.00\)/);
    // The medians (lower middle) of 2.0, 2.2 and 1.8, 2.0; every round's are 2.0 and 1.9.
    expect(text).toMatch(/depth 16: server CPU µs\/op, quiet rounds +2\.00 +1\.80 +1\.11x/);
    expect(text).toMatch(/depth 16: server CPU µs\/op +2\.00 +1\.90/);
    expect(text).toContain('(90 ms here)');
  });

  it('says so when no round was quiet', () => {
    const noisy: DepthRuns = { depth: 1, kvstack: [stolen(100, 500), stolen(100, 500)], redis: [stolen(100, 500), stolen(100, 500)] };
    const text = renderReport({ settings, cpus: 2, client: 'kvload', depths: [noisy], memory: undefined, http: undefined, commands: [] });
    expect(text).toMatch(/depth 1: ops\/s, quiet rounds' ratios \(0 of 2 rounds\) +—/);
  });
});
