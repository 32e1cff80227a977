import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { setImmediate as turn } from 'node:timers/promises';
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { BALLAST_STEP_BYTES, GcBallast, MAX_BALLAST_BYTES } from '../services/store/engine/gc-ballast.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** V8's own count of external memory (ArrayBuffers among it). */
const external = (): number => getHeapStatistics().external_memory;

/** Full (mark-compact) collections V8 ran while `work` ran. */
async function fullCollectionsDuring(work: () => void): Promise<number> {
  const seen: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => seen.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  work();
  // Node reports a collection from an immediate after it: two turns let every one arrive.
  await turn();
  await turn();
  seen.push(...observer.takeRecords());
  observer.disconnect();
  return seen.filter((e) => (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === 4).length;
}

/** Grows a resizable buffer by `bytes` in 1 MiB steps, through `ballast`; never writes it. */
function grow(ballast: GcBallast, bytes: number): ArrayBuffer {
  const buffer = new ArrayBuffer(0, { maxByteLength: bytes });
  for (let n = MiB; n <= bytes; n += MiB) ballast.resize(buffer, n);
  return buffer;
}

describe('GcBallast', () => {
  it('holds its size in whole steps without resident memory', () => {
    const rssBefore = process.memoryUsage().rss;
    const ballast = new GcBallast(GiB + BALLAST_STEP_BYTES / 2);
    expect(ballast.sizeBytes).toBe(GiB);
    expect(ballast.heldBytes).toBe(GiB);
    expect(ballast.takenBytes).toBe(0);
    // The buffers are mapped, never written: a GiB of ballast costs next to no RSS.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(64 * MiB);
    expect(new GcBallast(BALLAST_STEP_BYTES - 1).sizeBytes).toBe(0);
  });

  it('maps at most MAX_BALLAST_BYTES, whatever the cap', () => {
    expect(new GcBallast(2 * MAX_BALLAST_BYTES).sizeBytes).toBe(MAX_BALLAST_BYTES);
  });

  it('gives up whole steps before the engine grows, and takes them back after it shrinks', () => {
    const ballast = new GcBallast(8 * BALLAST_STEP_BYTES);
    const start = external();
    const buffer = new ArrayBuffer(0, { maxByteLength: 6 * BALLAST_STEP_BYTES });
    let highest = 0;
    for (let n = MiB; n <= 6 * BALLAST_STEP_BYTES; n += MiB) {
      ballast.resize(buffer, n);
      highest = Math.max(highest, external() - start);
      expect(ballast.takenBytes).toBe(n);
      // What the engine took is covered by whole steps the ballast gave up, and no more than one spare.
      expect(ballast.sizeBytes - ballast.heldBytes).toBeGreaterThanOrEqual(n);
      expect(ballast.sizeBytes - ballast.heldBytes).toBeLessThan(n + BALLAST_STEP_BYTES);
    }
    // V8's count never rose while the engine's buffer grew by 192 MiB (a few other allocations aside).
    expect(highest).toBeLessThan(4 * MiB);
    for (let n = 6 * BALLAST_STEP_BYTES - MiB; n >= 0; n -= MiB) ballast.resize(buffer, n);
    expect(ballast.takenBytes).toBe(0);
    // Back to its size, less at most the two steps of credit it keeps.
    expect(ballast.heldBytes).toBeGreaterThanOrEqual(ballast.sizeBytes - 2 * BALLAST_STEP_BYTES);
  });

  it('when it runs out, the engine grows as it would without one', () => {
    const ballast = new GcBallast(BALLAST_STEP_BYTES);
    ballast.take(3 * BALLAST_STEP_BYTES);
    expect(ballast.heldBytes).toBe(0);
    expect(ballast.takenBytes).toBe(3 * BALLAST_STEP_BYTES);
    ballast.give(3 * BALLAST_STEP_BYTES);
    // The debt is paid before the ballast grows again, and it never grows past its size.
    expect(ballast.heldBytes).toBeLessThanOrEqual(BALLAST_STEP_BYTES);
    expect(ballast.takenBytes).toBe(0);
  });

  it('lets 2 GiB of growth pass without the full collections V8 starts for it otherwise', async () => {
    const without = await fullCollectionsDuring(() => grow(new GcBallast(0), 2 * GiB));
    const ballast = new GcBallast(2 * GiB + 2 * BALLAST_STEP_BYTES);
    const withBallast = await fullCollectionsDuring(() => grow(ballast, 2 * GiB));
    // V8 starts one for every 64 MiB of external growth (measured: 14-19 for 2 GiB, as
    // several overlap); the one or two left with the ballast are those its own creation started.
    expect(without).toBeGreaterThanOrEqual(8);
    expect(withBallast).toBeLessThanOrEqual(2);
  });
});
