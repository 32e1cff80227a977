import { beforeAll, describe, expect, it } from 'vitest';
import { memberSeed, ShardRing, keyHash, score, type RingMember } from '../services/ring/shard-ring.ts';
import { RingMembership } from '../services/ring/ring-membership.ts';

// SPEC §6's routing properties over 1,000,000 keys: balance for 2 to 64 equal shards,
// a join moves keys only to the new shard (about 1/(N+1)), a leave or an ejection moves
// only the leaver's keys, each to its next choice.

const KEYS = 1_000_000;
const members = (n: number): RingMember[] => Array.from({ length: n }, (_, i) => ({ name: `store-${i}` }));

/** The hashes of KEYS keys; each test routes these (a key's hash is all routing reads). */
let hashes: Uint32Array;

beforeAll(() => {
  hashes = new Uint32Array(KEYS);
  for (let i = 0; i < KEYS; i++) hashes[i] = keyHash(`key:${i}`);
});

/** owner index per key on a ring */
function owners(ring: ShardRing): Uint16Array {
  const out = new Uint16Array(KEYS);
  for (let i = 0; i < KEYS; i++) out[i] = ring.indexForHash(hashes[i]!);
  return out;
}

function countsOf(owner: Uint16Array, n: number): number[] {
  const counts = new Array<number>(n).fill(0);
  for (const o of owner) counts[o]!++;
  return counts;
}

describe('ring balance over 1,000,000 keys', () => {
  it('puts no shard more than 10% above the mean (nor 10% below) for every N from 2 to 64', () => {
    // Rendezvous over store-0..store-(N-1) is the running best of the first N scores, so
    // one pass of 64 scores per key yields the owners for every N at once. Member b, once
    // the running best, owns the key for N from b+1 until a later member j beats it (N = j+1):
    // a range per owner, kept as a difference array over N (a few updates per key, not 64).
    const MAX = 64;
    const seeds = members(MAX).map((m) => memberSeed(m.name));
    const scoreOf = score; // a local binding: a call through the module namespace costs more than the score
    const W = MAX + 2;
    const diff = new Int32Array(MAX * W); // diff[owner * W + n]
    for (let k = 0; k < KEYS; k++) {
      const h = hashes[k]!;
      let best = 0;
      let bestScore = scoreOf(h, seeds[0]!);
      for (let i = 1; i < MAX; i++) {
        const s = scoreOf(h, seeds[i]!);
        if (s > bestScore) {
          diff[best * W + best + 1]!++;
          diff[best * W + i + 1]!--;
          bestScore = s;
          best = i;
        }
      }
      diff[best * W + best + 1]!++;
      diff[best * W + MAX + 1]!--;
    }
    const counts = new Uint32Array((MAX + 1) * MAX); // counts[n * MAX + owner]
    for (let owner = 0; owner < MAX; owner++) {
      let running = 0;
      for (let n = 1; n <= MAX; n++) {
        running += diff[owner * W + n]!;
        counts[n * MAX + owner] = running;
      }
    }
    for (let n = 1; n <= MAX; n++) expect(counts.subarray(n * MAX, n * MAX + n).reduce((a, b) => a + b, 0)).toBe(KEYS);
    const worst = { n: 0, max: 0, min: 2 };
    for (let n = 2; n <= MAX; n++) {
      const row = Array.from(counts.subarray(n * MAX, n * MAX + n));
      const mean = KEYS / n;
      const max = Math.max(...row) / mean;
      const min = Math.min(...row) / mean;
      if (max > worst.max) Object.assign(worst, { n, max });
      worst.min = Math.min(worst.min, min);
      expect(max, `max/mean for ${n} shards`).toBeLessThanOrEqual(1.1);
      expect(min, `min/mean for ${n} shards`).toBeGreaterThanOrEqual(0.9);
    }
    // The ring itself agrees with that running best.
    for (const n of [3, 64]) {
      expect(countsOf(owners(new ShardRing(members(n))), n), `${n} shards`).toEqual(Array.from(counts.subarray(n * MAX, n * MAX + n)));
    }
  });
});

describe('ring movement over 1,000,000 keys', () => {
  it.each([2, 3, 8, 63])('a join to %i shards moves only keys to the new shard, about 1/(N+1) of them', (n) => {
    const before = new ShardRing(members(n));
    const after = before.with({ name: `store-${n}` });
    const a = owners(before);
    const b = owners(after);
    let moved = 0;
    let toOldShard = 0;
    for (let i = 0; i < KEYS; i++) {
      if (a[i] === b[i]) continue;
      moved++;
      if (after.members[b[i]!]!.name !== `store-${n}`) toOldShard++;
    }
    expect(toOldShard).toBe(0);
    const expected = 1 / (n + 1);
    expect(moved / KEYS).toBeGreaterThan(expected * 0.95);
    expect(moved / KEYS).toBeLessThan(expected * 1.05);
  });

  it.each([
    [8, 'store-3'],
    [32, 'store-17'],
  ])('a leave from %i shards (%s) moves only the leaver\'s keys, each to its next choice', (n, leaver) => {
    const before = new ShardRing(members(n));
    const after = before.without(new Set([leaver]));
    const a = owners(before);
    const b = owners(after);
    let moved = 0;
    for (let i = 0; i < KEYS; i++) {
      const was = before.members[a[i]!]!.name;
      const now = after.members[b[i]!]!.name;
      if (was !== leaver) {
        if (now !== was) expect.fail(`key:${i} moved from ${was} to ${now}`);
        continue;
      }
      moved++;
      if (i % 16 === 0) expect(before.preference(`key:${i}`)[1]!.name).toBe(now); // a sample: preference() sorts
    }
    expect(moved).toBe(countsOf(a, n)[before.members.findIndex((m) => m.name === leaver)]);
    expect(moved).toBeGreaterThan(0);
  });

  it('an ejection moves only the ejected shard\'s keys, each to its next choice', () => {
    const membership = new RingMembership({ members: members(5), ejectAfter: 3, retryMs: 600_000 });
    try {
      const full = membership.ring;
      const a = owners(full);
      membership.recordFailure('store-2');
      membership.recordFailure('store-2');
      membership.recordSuccess('store-2'); // the run of failures ends
      membership.recordFailure('store-2');
      membership.recordFailure('store-2');
      expect(membership.ring).toBe(full);
      membership.recordFailure('store-2');
      expect(membership.isEjected('store-2')).toBe(true);
      const ejectedRing = membership.ring;
      expect(ejectedRing.members.map((m) => m.name)).toEqual(['store-0', 'store-1', 'store-3', 'store-4']);
      const b = owners(ejectedRing);
      let moved = 0;
      for (let i = 0; i < KEYS; i++) {
        const was = full.members[a[i]!]!.name;
        const now = ejectedRing.members[b[i]!]!.name;
        if (was !== 'store-2') {
          if (now !== was) expect.fail(`key:${i} moved from ${was} to ${now}`);
          continue;
        }
        moved++;
        // the next choice: the second-highest score on the full ring
        const h = hashes[i]!;
        let second = -1;
        let secondName = '';
        for (const m of full.members) {
          const s = score(h, memberSeed(m.name));
          if (m.name !== 'store-2' && s > second) {
            second = s;
            secondName = m.name;
          }
        }
        if (now !== secondName) expect.fail(`key:${i} went to ${now}, its next choice is ${secondName}`);
      }
      expect(moved).toBeGreaterThan(KEYS / 5 * 0.9);
    } finally {
      membership.close();
    }
  });
});
