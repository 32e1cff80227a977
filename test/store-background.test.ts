// The store's background work (background-work.ts): an expiry storm is swept in slices that
// follow one another while keys are due, with clients served in between; a resize under
// way is finished by the timer on an idle store. Engine clocks are fake: counts and states
// are asserted, never durations.
import { afterEach, describe, expect, it } from 'vitest';
import { BackgroundWork } from '../services/store/engine/background-work.ts';
import { BUCKET_MS } from '../services/store/engine/expiry-index.ts';
import { KvEngine, SWEEP_ENTRIES_PER_MS } from '../services/store/engine/kv-engine.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { waitUntil } from './helpers/wait-until.ts';

afterEach(destroyAll);

const STORM = 200_000;
const value = Buffer.from('0123456789');

function loadStorm(engine: KvEngine, keys: number, ttlSeconds: number): void {
  for (let i = 0; i < keys; i++) engine.setBytes(`storm:${i}`, value, 0, value.length, ttlSeconds);
}

describe('background work', () => {
  it('after one tick, slices follow one another until a storm of due keys is gone', async () => {
    const clock = { t: 0 };
    const engine = new KvEngine({ maxMemoryBytes: 1 << 30, evictionPolicy: 'lru', now: () => clock.t });
    loadStorm(engine, STORM, 1);
    engine.setBytes('kept', value, 0, value.length, 3600);
    // The timer would fire once an hour: only the catch-up slices can clear the storm.
    const work = new BackgroundWork({ engine, periodMs: 3_600_000, sliceMs: 2, rehashMs: 1 });
    work.start();
    try {
      clock.t += 1000 + BUCKET_MS;
      expect(engine.expiryBacklog).toBe(STORM);
      work.tick();
      // With the clock frozen, a 2 ms slice stops at its entry bound.
      expect(engine.keyCount).toBe(STORM + 1 - 2 * SWEEP_ENTRIES_PER_MS);
      await waitUntil('the storm to be swept', async () => (engine.keyCount === 1 ? true : undefined), { deadlineMs: 60_000, everyMs: 5 });
      expect(work.catchUpSlices).toBe(Math.ceil(STORM / (2 * SWEEP_ENTRIES_PER_MS)) - 1);
      expect(engine.expired).toBe(STORM);
      expect(engine.expiryBacklog).toBe(0);
      expect(engine.expiryDue).toBe(false);
      engine.verifyInvariants();
    } finally {
      work.stop();
    }
  });

  it('with nothing due a tick sweeps once and stops; stop() ends a catch-up under way', async () => {
    const clock = { t: 0 };
    const engine = new KvEngine({ maxMemoryBytes: 1 << 30, evictionPolicy: 'lru', now: () => clock.t });
    loadStorm(engine, 100_000, 1);
    const work = new BackgroundWork({ engine, periodMs: 3_600_000, sliceMs: 1, rehashMs: 1 });
    work.tick();
    expect(work.catchUpSlices).toBe(0); // nothing due yet
    clock.t += 2000;
    work.tick();
    expect(work.catchUpSlices).toBe(1); // one more slice is scheduled
    work.stop();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(engine.keyCount).toBe(100_000 - SWEEP_ENTRIES_PER_MS);
    expect(work.catchUpSlices).toBe(1);
  });

  it('the timer finishes a resize on an idle store', async () => {
    const engine = new KvEngine({ maxMemoryBytes: 1 << 30, evictionPolicy: 'lru' });
    let i = 0;
    while (engine.tableState.nextBuckets === 0) engine.setBytes(`k${i++}`, value, 0, value.length);
    const work = new BackgroundWork({ engine, periodMs: 1, sliceMs: 1, rehashMs: 1 });
    work.start();
    try {
      await waitUntil('the resize to finish', async () => (engine.tableState.nextBuckets === 0 ? true : undefined), { deadlineMs: 30_000, everyMs: 5 });
      engine.verifyInvariants();
    } finally {
      work.stop();
    }
  });
});

describe('the store under an expiry storm', () => {
  it('answers a client between slices while it sweeps, and USAGE reaches 0', async () => {
    const store = await startTestStore({ maxMemoryBytes: 1 << 30 }, { sweepIntervalMs: 20 });
    const { engine } = store.service;
    const c = await store.client();
    loadStorm(engine, STORM, 1);
    expect(await c.request('PING')).toBe('PONG');
    store.clock.advance(1000 + BUCKET_MS);
    // The sweep has begun once keys start going; a PING sent then is answered before the
    // storm is gone (the engine's clock is frozen, so each slice removes at most
    // 2 * SWEEP_ENTRIES_PER_MS keys and the storm takes ten of them).
    await waitUntil('the sweep to start', async () => (engine.keyCount < STORM ? true : undefined), { deadlineMs: 30_000, everyMs: 1 });
    expect(await c.request('PING')).toBe('PONG');
    const leftAtPong = engine.keyCount;
    expect(leftAtPong).toBeGreaterThan(0);
    await waitUntil('USAGE 0', async () => ((await c.request('USAGE')) === 'USAGE 0' ? true : undefined), { deadlineMs: 60_000, everyMs: 5 });
    expect(engine.expired).toBe(STORM);
    expect(store.service.background.catchUpSlices).toBeGreaterThan(0);
    const metrics = (await store.admin('/metrics')).body;
    expect(metrics).toMatch(/^kvstore_expired_keys_total 200000$/m);
    expect(metrics).toMatch(/^kvstore_expiry_backlog_keys 0$/m);
  });

  it('kvstore_expiry_backlog_keys counts the keys due and not yet swept', async () => {
    // The timer waits an hour: nothing sweeps while the metric is read.
    const store = await startTestStore({ maxMemoryBytes: 1 << 30 }, { sweepIntervalMs: 3_600_000 });
    loadStorm(store.service.engine, 1000, 1);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_expiry_backlog_keys 0$/m);
    store.clock.advance(1000 + BUCKET_MS);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_expiry_backlog_keys 1000$/m);
  });
});
