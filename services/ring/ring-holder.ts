import type { RingMember, ShardRing } from './shard-ring.ts';

/**
 * The ring in use. Membership changes build a new immutable ring and swap it in here;
 * a request reads `ring` once and routes on that ring, so a swap mid-request cannot
 * split one request over two memberships, and nothing is rebuilt per request.
 */
export class RingHolder<M extends RingMember = RingMember> {
  #ring: ShardRing<M>;
  #swaps = 0;

  constructor(ring: ShardRing<M>) {
    this.#ring = ring;
  }

  get ring(): ShardRing<M> {
    return this.#ring;
  }

  /** Rings swapped in since construction (the `kvbackend_store_ring_changes_total` count). */
  get swaps(): number {
    return this.#swaps;
  }

  /** Puts `next` in use; returns the ring it replaced. */
  swap(next: ShardRing<M>): ShardRing<M> {
    const previous = this.#ring;
    this.#ring = next;
    this.#swaps++;
    return previous;
  }
}
