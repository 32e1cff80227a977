import { describe, expect, it } from 'vitest';
import { KvEngine } from '../services/store/engine/kv-engine.ts';
import { ChunkPool, SnapshotDecoder, SnapshotEncoder } from '../services/store/snapshots/snapshot-format.ts';
import { numberedKeys } from './helpers/keys.ts';
import { b64 } from './helpers/base64.ts';

// The point-in-time property of the engine's snapshot walk: with writes, overwrites,
// deletes, TTL changes, expiry, eviction and reads racing it between its steps, the walk
// hands over exactly the keyspace of the moment it began, each key once. Then the same
// records go through the file format and into a fresh engine (snapshot and reload).

/** A small deterministic PRNG (mulberry32), so a failing seed can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Entry {
  readonly value: string;
  /** TTL -1 (none) or whole seconds left, rounded up, as TTL reports it. */
  readonly ttl: number;
}

class Clock {
  ms = 1_000_000;
  readonly now = (): number => this.ms;
}

/** The keyspace read through GET and TTL (expired keys are left out, and removed). */
function stateOf(engine: KvEngine, keys: Iterable<string>): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const k of keys) {
    const value = engine.get(k);
    const ttl = engine.ttl(k);
    if (value !== undefined && ttl !== null) out.set(k, { value, ttl });
  }
  return out;
}

/** A record's expiry as the TTL it had at the walk's start. */
const ttlAt = (expiresAt: number, start: number): number => (expiresAt === 0 ? -1 : Math.max(1, Math.ceil(Math.round((expiresAt - start) * 1000) / 1e6)));

function runRace(seed: number, keys: number, ops: number): void {
  const rnd = prng(seed);
  const clock = new Clock();
  // A cap that the writes overrun, so eviction races the walk too.
  const engine = new KvEngine({ maxMemoryBytes: 60_000, evictionPolicy: 'lru', now: clock.now, minBuckets: 4, rehashStepBuckets: 1 });
  const names = numberedKeys(keys * 2);
  const value = (): string => b64('v'.repeat(Math.floor(rnd() * 300)));
  for (let i = 0; i < keys; i++) {
    const ttl = rnd() < 0.3 ? 1 + Math.floor(rnd() * 5) : undefined;
    engine.set(names[i]!, value(), ttl);
  }
  clock.ms += Math.floor(rnd() * 3000); // some TTLs have run out, unswept
  const atStart = stateOf(engine, names);

  const got = new Map<string, Entry>();
  const start = clock.ms;
  let duplicates = 0;
  const expiries = new Map<string, number>();
  const walk = engine.beginSnapshot((src, ks, ke, vs, ve, expiresAt) => {
    const k = src.toString('utf8', ks, ke);
    if (got.has(k)) duplicates++;
    got.set(k, { value: src.toString('base64', vs, ve), ttl: ttlAt(expiresAt, start) });
    expiries.set(k, expiresAt);
  });
  expect(walk.startedAt).toBe(start);
  let more = true;
  for (let i = 0; i < ops || more; i++) {
    if (more && rnd() < 0.3) more = walk.step(1 + Math.floor(rnd() * 4));
    if (i >= ops) continue;
    const k = names[Math.floor(rnd() * names.length)]!;
    const r = rnd();
    if (r < 0.3) engine.set(k, value(), rnd() < 0.3 ? 1 + Math.floor(rnd() * 5) : undefined);
    else if (r < 0.45) engine.delete(k);
    else if (r < 0.55) engine.expire(k, 1 + Math.floor(rnd() * 5));
    else if (r < 0.8) engine.get(k);
    else if (r < 0.9) clock.ms += Math.floor(rnd() * 700);
    else engine.sweepExpired(1);
  }
  walk.end();
  engine.verifyInvariants();

  expect(duplicates).toBe(0);
  // Keys handed over with a TTL that ran out after the start are still part of the image.
  expect(new Map([...got].sort())).toEqual(new Map([...atStart].sort()));

  // Through the file format into a fresh engine, as a load does (expiry relative to "now").
  const chunks: Buffer[] = [];
  const encoder = new SnapshotEncoder((c) => chunks.push(c), 0, new ChunkPool(4096));
  for (const [k, e] of got) {
    const kb = Buffer.from(k);
    const vb = Buffer.from(e.value, 'base64');
    const src = Buffer.concat([kb, vb]);
    encoder.record(src, 0, kb.length, kb.length, src.length, expiries.get(k)!);
  }
  encoder.finish();
  // The reload happens "at the start": TTLs are relative to the walk's point in time.
  clock.ms = start;
  const reloaded = new KvEngine({ maxMemoryBytes: 10_000_000, evictionPolicy: 'lru', now: clock.now });
  const decoder = new SnapshotDecoder((src, ks, ke, vs, ve, expiresAt) => {
    const ttlMs = expiresAt === 0 ? undefined : expiresAt - walk.startedAt;
    if (ttlMs !== undefined && ttlMs <= 0) return;
    expect(reloaded.setAt(src, ks, ke, vs, ve, ttlMs === undefined ? undefined : ttlMs / 1000)).toBe('ok');
  });
  decoder.push(Buffer.concat(chunks));
  decoder.end();
  expect(new Map([...stateOf(reloaded, names)].sort())).toEqual(new Map([...atStart].sort()));
}

describe('snapshot walk: a point-in-time image while commands race it', () => {
  it('hands over exactly the keyspace of its start, each key once (200 random races)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      try {
        runRace(seed, 40 + (seed % 60), 400);
      } catch (err) {
        throw new Error(`seed ${seed}: ${(err as Error).message}`, { cause: err });
      }
    }
  });

  it('with nothing racing it, hands over every key from least to most recently used', () => {
    const engine = new KvEngine({ maxMemoryBytes: 1e6, evictionPolicy: 'lru' });
    for (let i = 0; i < 100; i++) engine.set(`k${i}`, 'dmFsdWU=');
    engine.get('k0');
    const order: string[] = [];
    const walk = engine.beginSnapshot((src, ks, ke) => order.push(src.toString('utf8', ks, ke)));
    while (walk.step(7));
    walk.end();
    expect(order).toEqual([...Array.from({ length: 99 }, (_, i) => `k${i + 1}`), 'k0']);
  });

  it('allows one walk at a time, and a new one once it ended', () => {
    const engine = new KvEngine({ maxMemoryBytes: 1e6, evictionPolicy: 'lru' });
    const walk = engine.beginSnapshot(() => {});
    expect(() => engine.beginSnapshot(() => {})).toThrow(/already under way/);
    walk.end();
    expect(() => walk.step(1)).toThrow(/ended/);
    engine.beginSnapshot(() => {}).end();
  });
});
