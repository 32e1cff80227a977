import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fmix32, murmur3_32, murmur3_32Utf8, murmur3_32View } from '../services/ring/murmur3.ts';
import { RingHolder } from '../services/ring/ring-holder.ts';
import { RingMembership, type RingChange } from '../services/ring/ring-membership.ts';
import { keyHash, memberSeed, RingMembersError, score, ShardRing, type RingMember } from '../services/ring/shard-ring.ts';
import { waitUntil } from './helpers/wait-until.ts';

const members = (n: number): RingMember[] => Array.from({ length: n }, (_, i) => ({ name: `store-${i}` }));
const names = (list: readonly RingMember[]) => list.map((m) => m.name);

describe('murmur3_32', () => {
  it('matches the published MurmurHash3_x86_32 test vectors', () => {
    const h = (text: string, seed = 0) => murmur3_32(Buffer.from(text, 'utf8'), 0, Buffer.byteLength(text), seed);
    expect(h('')).toBe(0);
    expect(h('', 1)).toBe(0x514e28b7);
    expect(h('', 0xffffffff)).toBe(0x81f16f39);
    expect(h('hello')).toBe(0x248bfa47);
    expect(h('Hello, world!', 1234)).toBe(0xfaf6cdb3);
    expect(h('The quick brown fox jumps over the lazy dog')).toBe(0x2e4ff723);
    expect(murmur3_32(Buffer.from([0x21, 0x43, 0x65, 0x87]))).toBe(0xf55b516b); // a block read little-endian
  });

  it('hashes a range of a buffer as the bytes alone', () => {
    const buf = Buffer.from('xxGET user:42 yy');
    expect(murmur3_32(buf, 6, 13)).toBe(murmur3_32(Buffer.from('user:42')));
  });

  it('hashes the bytes of a view as murmur3_32 hashes them, whatever the view\'s offset, the range and the seed', () => {
    expect(murmur3_32View(new DataView(new Uint8Array(Buffer.from('hello')).buffer), 0, 5, 0)).toBe(0x248bfa47);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.nat(5), fc.nat(40), fc.nat(40), fc.integer(), (bytes, shift, a, b, seed) => {
        const buf = Buffer.alloc(bytes.length + shift).subarray(shift);
        buf.set(bytes);
        const start = Math.min(a, b, buf.length);
        const end = Math.min(Math.max(a, b), buf.length);
        const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
        expect(murmur3_32View(view, start, end, seed)).toBe(murmur3_32(buf, start, end, seed));
      }),
      { numRuns: 2000 },
    );
  });

  it('hashes a string as its UTF-8 bytes (any string, lone surrogates as U+FFFD)', () => {
    for (const s of ['', 'a', 'abcd', 'abcdé', 'é', '😀', '\ud800', 'a\udc00b', 'ü'.repeat(600), 'k'.repeat(250)]) {
      expect(murmur3_32Utf8(s), JSON.stringify(s)).toBe(murmur3_32(Buffer.from(s, 'utf8')));
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme-ascii', maxLength: 12 }), (a, b) => {
        for (const s of [a, b + a, a + b]) expect(murmur3_32Utf8(s)).toBe(murmur3_32(Buffer.from(s, 'utf8')));
      }),
      { numRuns: 300 },
    );
  });

  it('fmix32 is a bijection, so distinct member seeds never tie for a key', () => {
    const seen = new Set<number>();
    for (let x = 0; x < 1 << 16; x++) seen.add(fmix32(x * 65_537));
    expect(seen.size).toBe(1 << 16);
  });
});

describe('ShardRing', () => {
  it('routes a key given as a string or as its bytes to the same member', () => {
    const ring = new ShardRing(members(5));
    for (const key of ['user:1', 'clé', '🔑', 'x'.repeat(250)]) {
      expect(ring.shardFor(Buffer.from(key))).toBe(ring.shardFor(key));
      expect(ring.shardForBytes(Buffer.from(`GET ${key} x`), 4, 4 + Buffer.byteLength(key))).toBe(ring.shardFor(key));
    }
  });

  it('gives the member with the highest score, whatever order the members are listed in', () => {
    const list = members(7);
    const ring = new ShardRing(list);
    const reversed = new ShardRing([...list].reverse());
    for (let i = 0; i < 2000; i++) {
      const key = `k${i}`;
      const best = list.reduce((a, b) => (score(keyHash(key), memberSeed(b.name)) > score(keyHash(key), memberSeed(a.name)) ? b : a));
      expect(ring.shardFor(key)).toBe(best);
      expect(reversed.shardFor(key)).toBe(best);
    }
  });

  it('lists a key\'s choices in order: first the owner, then where it goes when the owner leaves', () => {
    const ring = new ShardRing(members(6));
    for (let i = 0; i < 500; i++) {
      const key = `k${i}`;
      const order = ring.preference(key);
      expect(names(order).sort()).toEqual(names(members(6)).sort());
      expect(order[0]).toBe(ring.shardFor(key));
      expect(ring.without(new Set([order[0]!.name])).shardFor(key)).toBe(order[1]);
      expect(ring.without(new Set([order[0]!.name, order[1]!.name])).shardFor(key)).toBe(order[2]);
    }
  });

  it('routes everything to a single member', () => {
    const ring = new ShardRing([{ name: 'only' }]);
    expect(ring.shardFor('a').name).toBe('only');
    expect(ring.shardFor('zzz').name).toBe('only');
  });

  it('refuses an empty member list, a name twice, and names whose hashes collide', () => {
    expect(() => new ShardRing([])).toThrow(RingMembersError);
    expect(() => new ShardRing([{ name: 'a' }, { name: 'a' }])).toThrow(/two members are named "a"/);
    // two names with the same murmur3_32, found by search: they would never share keys
    const [x, y] = collidingNames();
    expect(() => new ShardRing([{ name: x }, { name: y }])).toThrow(/hash alike/);
  });

  it('is immutable: with() and without() build new rings', () => {
    const ring = new ShardRing(members(3));
    const bigger = ring.with({ name: 'store-3' });
    expect(ring.size).toBe(3);
    expect(bigger.size).toBe(4);
    expect(ring.without(new Set(['store-1'])).size).toBe(2);
    expect(Object.isFrozen(ring)).toBe(true);
    expect(Object.isFrozen(ring.members)).toBe(true);
  });
});

/** Two distinct names with equal murmur3_32 (a birthday search over `n<i>`). */
function collidingNames(): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const name = `n${i}`;
    const other = seen.get(memberSeed(name));
    if (other !== undefined) return [other, name];
    seen.set(memberSeed(name), name);
  }
}

describe('RingHolder', () => {
  it('swaps the ring in use; a ring read before the swap stays whole', () => {
    const first = new ShardRing(members(3));
    const holder = new RingHolder(first);
    const inFlight = holder.ring;
    const second = first.with({ name: 'store-3' });
    expect(holder.swap(second)).toBe(first);
    expect(holder.ring).toBe(second);
    expect(holder.swaps).toBe(1);
    expect(inFlight.size).toBe(3);
  });
});

describe('RingMembership', () => {
  it('ejects a shard after SHARD_EJECT_AFTER consecutive failures and readmits it after SHARD_RETRY_MS', async () => {
    const changes: RingChange<RingMember>[] = [];
    const membership = new RingMembership({ members: members(3), ejectAfter: 2, retryMs: 50, onChange: (c) => changes.push(c) });
    try {
      const full = membership.ring;
      membership.recordFailure('store-1');
      expect(membership.ring).toBe(full);
      membership.recordFailure('store-1');
      expect(names(membership.ring.members)).toEqual(['store-0', 'store-2']);
      expect(changes.map((c) => c.kind)).toEqual(['ejected']);
      membership.recordFailure('store-1'); // already out: nothing more happens
      expect(membership.holder.swaps).toBe(1);
      await waitUntil('store-1 readmitted', async () => (membership.isEjected('store-1') ? undefined : true), { deadlineMs: 5000, everyMs: 10 });
      expect(membership.ring).toBe(full); // the configured ring itself: every key back where it was
      expect(changes.map((c) => c.kind)).toEqual(['ejected', 'readmitted']);
      expect(changes[1]!.kind === 'readmitted' && changes[1]!.member.name).toBe('store-1');
      // the count starts again after a readmission
      membership.recordFailure('store-1');
      expect(membership.isEjected('store-1')).toBe(false);
    } finally {
      membership.close();
    }
  });

  it('never ejects with SHARD_EJECT_AFTER=0', () => {
    const membership = new RingMembership({ members: members(3), ejectAfter: 0, retryMs: 30_000 });
    for (let i = 0; i < 100; i++) membership.recordFailure('store-0');
    expect(membership.ring.size).toBe(3);
    expect(membership.holder.swaps).toBe(0);
    membership.close();
  });

  it('keeps the last shard in the ring even when it fails too', () => {
    const membership = new RingMembership({ members: members(2), ejectAfter: 1, retryMs: 600_000 });
    membership.recordFailure('store-0');
    membership.recordFailure('store-1');
    expect(names(membership.ring.members)).toEqual(['store-1']);
    expect(membership.isEjected('store-1')).toBe(false);
    membership.close();
  });

  it('keeps ejections across a membership change and forgets shards that left', () => {
    const changes: string[] = [];
    const membership = new RingMembership({ members: members(3), ejectAfter: 1, retryMs: 600_000, onChange: (c) => changes.push(c.kind) });
    membership.recordFailure('store-2');
    membership.setMembers([...members(4)].filter((m) => m.name !== 'store-0'));
    expect(names(membership.members)).toEqual(['store-1', 'store-2', 'store-3']);
    expect(names(membership.ring.members)).toEqual(['store-1', 'store-3']);
    expect(changes).toEqual(['ejected', 'members']);
    membership.close();
  });

  it('ejects nothing more once closed', () => {
    const membership = new RingMembership({ members: members(3), ejectAfter: 1, retryMs: 600_000 });
    membership.recordFailure('store-0');
    membership.close();
    membership.recordFailure('store-1');
    expect(names(membership.ring.members)).toEqual(['store-1', 'store-2']);
  });
});
