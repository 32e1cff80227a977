import { describe, expect, it } from 'vitest';
import type { StoreRun } from '../bench/bench-processes.ts';
import { renderReport, roundRatios, type DepthRuns } from '../bench/bench-report.ts';
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

  it('leaves the paired row out with a single round', () => {
    const text = renderReport({ settings: { ...settings, rounds: 1 }, cpus: 2, client: 'kvload', depths: [{ depth: 1, kvstack: [run(90)], redis: [run(100)] }], memory: undefined, http: undefined, commands: [] });
    expect(text).toMatch(/depth 1: ops\/s +90 +100 +0\.90x/);
    expect(text).not.toMatch(/median of the rounds' ratios +\d/);
  });
});
