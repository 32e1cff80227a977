// The store's memory bound, checked on a real store process: a churn of values from 1 B to
// 64 KiB over a keyspace twice the cap (so the store keeps evicting), then DELETE of every
// key. Resident memory must stay within the bound docs/limits-and-capacity.md states, and the records'
// memory must leave the process when the keys do (before, it stayed until a collection
// that an idle store never ran, and malloc kept the holes). Bounded by a command count.
import { describe, expect, it } from 'vitest';
import { formatChurnReport, runMemoryChurn } from '../bench/memory-churn.ts';
import { storeRssBoundBytes } from '../grafana/alert-thresholds.ts';
import { arenaEmptyBytes, arenaPageTarget } from '../services/store/engine/record-arena.ts';

const MiB = 1024 * 1024;

describe('store memory under a churn of mixed value sizes', () => {
  it('stays within 1.5 × the cap plus the baseline, and gives the records memory back after every key is deleted', { timeout: 180_000 }, async () => {
    const cap = 64 * MiB;
    const report = await runMemoryChurn({
      maxMemoryBytes: cap,
      maxValueBytes: 64 * 1024,
      keys: 4000,
      ops: 12_000,
      connections: 2,
      depth: 8,
      sampleMs: 250,
      settleMs: 0,
      log: () => {},
    });
    console.log(formatChurnReport(report));
    expect(report.storeAlive).toBe(true);
    expect(report.errors).toBe(0);
    expect(report.evictions).toBeGreaterThan(0);
    expect(report.peakRssBytes).toBeLessThanOrEqual(storeRssBoundBytes(cap));

    expect(report.keysAfterDelete).toBe(0);
    const arenaEnd = report.arenaEndOfChurnBytes!;
    const arenaAfter = report.arenaAfterDeleteBytes!;
    expect(arenaEnd).toBeGreaterThan(0.9 * cap); // the churn filled the cap
    expect(arenaAfter).toBeLessThanOrEqual(arenaEmptyBytes(arenaPageTarget(cap))); // at most a spare page per size class
    // Most of what the arena gave back left the process's resident memory at once.
    expect(report.rssEndOfChurnBytes - report.rssAfterDeleteBytes).toBeGreaterThan(0.5 * (arenaEnd - arenaAfter));
  });
});
