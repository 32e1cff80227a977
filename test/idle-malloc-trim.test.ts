// The trim of malloc's heaps when the store goes idle (services/store/runtime/idle-malloc-trim.ts):
// never while the store is busy, a few trims per idle spell, rearmed by activity; and the
// add-on's mallocTrim, which runs off the serving thread and calls back.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdleMallocTrim, NUDGE_REARM_PERIODS, TRIMS_PER_IDLE_SPELL } from '../services/store/runtime/idle-malloc-trim.ts';
import { loadSocketIo } from '../services/store/network/native-io.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('idle malloc trim', () => {
  it('trims only after a whole period without activity, a few times per idle spell, and again once activity has come and gone', () => {
    vi.useFakeTimers();
    let activity = 0;
    const calls: number[] = [];
    const idle = new IdleMallocTrim({ trim: (done) => (calls.push(Date.now()), done(1)), activity: () => activity, periodMs: 1000 });
    idle.start();
    // Busy: the count moves every period, so nothing is trimmed.
    for (let i = 0; i < 5; i++) {
      activity += 10;
      vi.advanceTimersByTime(1000);
    }
    expect(calls).toHaveLength(0);
    // Idle: a trim a period, TRIMS_PER_IDLE_SPELL of them, then none however long it stays idle.
    vi.advanceTimersByTime(20_000);
    expect(calls).toHaveLength(TRIMS_PER_IDLE_SPELL);
    expect(idle.trims).toBe(TRIMS_PER_IDLE_SPELL);
    expect(idle.released).toBe(TRIMS_PER_IDLE_SPELL);
    // Activity rearms it.
    activity++;
    vi.advanceTimersByTime(1000);
    expect(calls).toHaveLength(TRIMS_PER_IDLE_SPELL);
    vi.advanceTimersByTime(1000);
    expect(calls).toHaveLength(TRIMS_PER_IDLE_SPELL + 1);
    idle.close();
    vi.advanceTimersByTime(10_000);
    expect(calls).toHaveLength(TRIMS_PER_IDLE_SPELL + 1);
  });

  it('gives back what the store holds itself on this thread before each trim of an idle spell, the one after start-up too, never while busy', () => {
    vi.useFakeTimers();
    let activity = 0;
    const order: string[] = [];
    const idle = new IdleMallocTrim({
      trim: (done) => (order.push('trim'), done(1)),
      activity: () => activity,
      periodMs: 1000,
      release: (trimOfSpell) => void order.push(`release ${trimOfSpell}`),
    });
    idle.start();
    // Idle from start-up: what loading left behind, then malloc's trim (the compiler's work).
    vi.advanceTimersByTime(1000);
    expect(order).toEqual(['release 0', 'trim']);
    vi.advanceTimersByTime(10_000);
    expect(order).toEqual(Array.from({ length: TRIMS_PER_IDLE_SPELL }, (_, i) => [`release ${i}`, 'trim']).flat());
    order.length = 0;
    activity++;
    vi.advanceTimersByTime(1000);
    expect(order).toEqual([]);
    vi.advanceTimersByTime(1000);
    expect(order).toEqual(['release 0', 'trim']);
    vi.advanceTimersByTime(10_000);
    expect(order).toEqual(Array.from({ length: TRIMS_PER_IDLE_SPELL }, (_, i) => [`release ${i}`, 'trim']).flat());
    // A new spell starts again from the first.
    activity++;
    vi.advanceTimersByTime(2000);
    expect(order.slice(-2)).toEqual(['release 0', 'trim']);
    idle.close();
  });

  it('a nudge (a request to the admin port) neither keeps the store from being idle nor starts a spell sooner than NUDGE_REARM_PERIODS after the last', () => {
    vi.useFakeTimers();
    let nudges = 0;
    const order: string[] = [];
    const idle = new IdleMallocTrim({
      trim: (done) => (order.push('trim'), done(1)),
      activity: () => 0,
      nudges: () => nudges,
      periodMs: 1000,
      release: (trimOfSpell) => void order.push(`release ${trimOfSpell}`),
    });
    idle.start();
    // Nudged at every tick, as a scraper asking every second: the spell after start-up runs all the same.
    for (let t = 0; t < TRIMS_PER_IDLE_SPELL; t++) {
      nudges++;
      vi.advanceTimersByTime(1000);
    }
    expect(order.filter((o) => o === 'trim')).toHaveLength(TRIMS_PER_IDLE_SPELL);
    order.length = 0;
    // More nudges: nothing until NUDGE_REARM_PERIODS have passed since the spell's last trim, then a new spell.
    for (let t = 1; t < NUDGE_REARM_PERIODS; t++) {
      nudges++;
      vi.advanceTimersByTime(1000);
    }
    expect(order).toEqual([]);
    vi.advanceTimersByTime(1000);
    expect(order).toEqual(['release 0', 'trim']);
    vi.advanceTimersByTime(10_000);
    expect(order.filter((o) => o === 'trim')).toHaveLength(TRIMS_PER_IDLE_SPELL);
    // Without a nudge, no new spell however long it stays idle.
    order.length = 0;
    vi.advanceTimersByTime(60_000);
    expect(order).toEqual([]);
    idle.close();
  });

  it('starts no trim while one is under way', () => {
    vi.useFakeTimers();
    let finish: ((result: number) => void) | undefined;
    let started = 0;
    const idle = new IdleMallocTrim({ trim: (done) => (started++, (finish = done)), activity: () => 0, periodMs: 100 });
    idle.start();
    vi.advanceTimersByTime(1000);
    expect(started).toBe(1);
    finish!(0);
    expect(idle.trims).toBe(1);
    expect(idle.released).toBe(0);
    vi.advanceTimersByTime(100);
    expect(started).toBe(2);
    idle.close();
  });

  it.skipIf(process.platform !== 'linux')("the add-on's mallocTrim runs malloc_trim off this thread and calls back with its result", async () => {
    const addon = loadSocketIo();
    const mallocTrim = 'io' in addon ? addon.io.mallocTrim?.bind(addon.io) : undefined;
    expect(mallocTrim, 'the native add-on with mallocTrim (npm ci builds it)').toBeTypeOf('function');
    // Free memory for it to find: blocks below the mmap threshold, freed.
    const blocks = Array.from({ length: 2000 }, () => Buffer.allocUnsafeSlow(16 * 1024).fill(1));
    blocks.length = 0;
    let calledBack = false;
    const result = await new Promise<number>((resolve) => {
      mallocTrim!((r) => ((calledBack = true), resolve(r)));
      expect(calledBack).toBe(false); // not on this thread: the call returned first
    });
    expect([0, 1]).toContain(result);
    expect(() => (mallocTrim as unknown as (x: number) => void)(1)).toThrow(/mallocTrim\(done\)/);
  });
});
