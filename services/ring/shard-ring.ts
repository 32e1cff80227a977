import { fmix32, murmur3_32, murmur3_32Utf8 } from './murmur3.ts';

// Rendezvous (highest random weight) hashing over 32-bit MurmurHash3 (docs/sharding.md):
//   keyHash    = murmur3_32(key bytes, seed 0)
//   memberSeed = murmur3_32(UTF-8 bytes of the member's name, seed 0)
//   score      = fmix32(keyHash XOR memberSeed)            (unsigned 32-bit)
// A key belongs to the member with the highest score; its preference list is the members
// by descending score. fmix32 is a bijection, so members with distinct seeds never tie,
// and the answer does not depend on the order the members are listed in.

export interface RingMember {
  /** The shard's identity: places it on the ring (SPEC §6). */
  readonly name: string;
}

export type RingKey = string | Uint8Array;

/** The 32-bit hash of a key's bytes (a string is hashed as its UTF-8 bytes). */
export function keyHash(key: RingKey): number {
  return typeof key === 'string' ? murmur3_32Utf8(key) : murmur3_32(key, 0, key.length);
}

/** The 32-bit hash of a member's name. */
export function memberSeed(name: string): number {
  return murmur3_32Utf8(name);
}

/** The weight of a member for a key: the higher, the more the key prefers the member. */
export function score(hashOfKey: number, seedOfMember: number): number {
  return fmix32(hashOfKey ^ seedOfMember);
}

/** Why a member list cannot make a ring; the caller names the setting it came from. */
export class RingMembersError extends Error {
  override name = 'RingMembersError';
}

/**
 * An immutable ring of shards. Built once per membership (start-up, a membership change,
 * an ejection); routing a key costs one hash of its bytes plus one fmix32 per member.
 */
export class ShardRing<M extends RingMember = RingMember> {
  readonly members: readonly M[];
  readonly #seeds: Uint32Array;

  constructor(members: readonly M[]) {
    if (members.length === 0) throw new RingMembersError('a ring needs at least one member');
    const seeds = new Uint32Array(members.length);
    const byName = new Map<string, number>();
    const bySeed = new Map<number, string>();
    members.forEach((m, i) => {
      if (byName.has(m.name)) throw new RingMembersError(`two members are named ${JSON.stringify(m.name)}`);
      const seed = memberSeed(m.name);
      const other = bySeed.get(seed);
      if (other !== undefined) {
        throw new RingMembersError(`members ${JSON.stringify(other)} and ${JSON.stringify(m.name)} hash alike (they would never share keys); rename one`);
      }
      byName.set(m.name, i);
      bySeed.set(seed, m.name);
      seeds[i] = seed;
    });
    this.members = Object.freeze([...members]);
    this.#seeds = seeds;
    Object.freeze(this);
  }

  get size(): number {
    return this.members.length;
  }

  /** The member a key belongs to. */
  shardFor(key: RingKey): M {
    return this.members[this.indexForHash(keyHash(key))]!;
  }

  /** The member owning the key bytes[start, end) (a key inside a command line, not copied). */
  shardForBytes(bytes: Uint8Array, start = 0, end = bytes.length): M {
    return this.members[this.indexForHash(murmur3_32(bytes, start, end))]!;
  }

  /** The index in `members` of the owner of a key hash (for callers keeping per-member arrays). */
  indexForHash(hashOfKey: number): number {
    const seeds = this.#seeds;
    let best = 0;
    let bestScore = -1;
    for (let i = 0; i < seeds.length; i++) {
      // score(hashOfKey, seeds[i]), written out: this loop is all that routing costs
      let s = hashOfKey ^ seeds[i]!;
      s ^= s >>> 16;
      s = Math.imul(s, 0x85ebca6b);
      s ^= s >>> 13;
      s = Math.imul(s, 0xc2b2ae35);
      s ^= s >>> 16;
      s >>>= 0;
      if (s > bestScore) {
        bestScore = s;
        best = i;
      }
    }
    return best;
  }

  /**
   * The key's members from first to last choice. Element 0 is `shardFor(key)`; element 1
   * is where the key goes if the first leaves or is ejected, and so on.
   */
  preference(key: RingKey): M[] {
    const h = keyHash(key);
    const order = this.members.map((_, i) => i);
    const scores = Array.from(this.#seeds, (seed) => fmix32(h ^ seed));
    order.sort((a, b) => scores[b]! - scores[a]!);
    return order.map((i) => this.members[i]!);
  }

  /** The member named so, if any. */
  member(name: string): M | undefined {
    return this.members.find((m) => m.name === name);
  }

  /** This ring without the named members (a leave or an ejection): only their keys move. */
  without(names: ReadonlySet<string>): ShardRing<M> {
    return new ShardRing(this.members.filter((m) => !names.has(m.name)));
  }

  /** This ring with one more member (a join): only the keys it now wins move, all to it. */
  with(member: M): ShardRing<M> {
    return new ShardRing([...this.members, member]);
  }
}
