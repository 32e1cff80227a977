// The engine's LRU list: a doubly linked list through the slots' PREV and NEXT fields
// (slot-layout.ts), slot 0 its sentinel, from the least recently used (after the sentinel)
// to the most recently used (before it). Eviction takes the first key.
//
// Approximate, as memcached's (which moves an item at most once a minute) and Redis's
// (which samples): moving a key writes to its two neighbours, random slots, which with many
// keys are cache misses, about an eighth of a pipelined GET's cost. So from
// EXACT_LRU_BELOW_KEYS keys on, a GET moves its key only when it has fallen into the least
// recent quarter (see touch); a small list is in cache and costs nothing to keep exact.

import { SLOT } from './slot-layout.ts';

const STRIDE_SHIFT = SLOT.STRIDE_SHIFT;
const PREV = SLOT.PREV;
const NEXT = SLOT.NEXT;
const STAMP = SLOT.STAMP;
const LRU = SLOT.LRU;

/** Keys below which LRU is exact (see the top of this file). */
export const EXACT_LRU_BELOW_KEYS = 1024;

export class LruList {
  /** The engine's slot fields (a view that tracks its resizable buffer, so it is never replaced). */
  readonly #slots: Int32Array;
  /** Links made at the most recent end (mod 2^32): a slot's STAMP minus this is how far back it went in. */
  #links = 0;
  readonly #exactBelow: number;
  /**
   * A reader's place in the list (the snapshot walk's: the next slot it looks at), or -1 for
   * none. A slot that leaves its place moves the reader on to the slot after it, so a walk
   * never follows a key to the most recent end.
   */
  cursor = -1;

  constructor(slots: Int32Array, exactBelowKeys: number) {
    this.#slots = slots;
    this.#exactBelow = exactBelowKeys;
  }

  /** The least recently used slot; the sentinel (0) when the list is empty. */
  get oldest(): number {
    return this.#slots[(LRU << STRIDE_SHIFT) + NEXT]!;
  }

  /** The slot used next after `slot` (the sentinel, 0, after the most recent). */
  after(slot: number): number {
    return this.#slots[(slot << STRIDE_SHIFT) + NEXT]!;
  }

  /**
   * A GET's use of the slot, one of `live` keys: a key that went in at the most recent end
   * fewer links ago than three quarters of the keys is still among the most recent three
   * quarters, so it stays where it is; a quarter of the keys, all used less recently than
   * its last move, are evicted before it. Below the exact bound it always moves.
   */
  touch(slot: number, live: number): void {
    const slots = this.#slots;
    if (slots[(LRU << STRIDE_SHIFT) + PREV] === slot) return; // already the most recent
    if (live >= this.#exactBelow && (this.#links - slots[(slot << STRIDE_SHIFT) + STAMP]!) >>> 0 < live - (live >>> 2)) return;
    this.unlink(slot);
    this.linkLast(slot);
  }

  /** Takes the slot out of the list. */
  unlink(slot: number): void {
    const slots = this.#slots;
    const o = slot << STRIDE_SHIFT;
    const prev = slots[o + PREV]!;
    const next = slots[o + NEXT]!;
    if (this.cursor === slot) this.cursor = next;
    slots[(prev << STRIDE_SHIFT) + NEXT] = next;
    slots[(next << STRIDE_SHIFT) + PREV] = prev;
  }

  /** Links the slot as the most recently used. */
  linkLast(slot: number): void {
    const slots = this.#slots;
    const o = slot << STRIDE_SHIFT;
    slots[o + STAMP] = this.#links;
    this.#links = (this.#links + 1) | 0;
    const last = slots[(LRU << STRIDE_SHIFT) + PREV]!;
    slots[o + PREV] = last;
    slots[o + NEXT] = LRU;
    slots[(last << STRIDE_SHIFT) + NEXT] = slot;
    slots[(LRU << STRIDE_SHIFT) + PREV] = slot;
  }

  /**
   * Walks the list from the least recently used, checking each link both ways, and calls
   * `each` per slot; `fail` on a broken link or a list longer than `maxSlots`. Returns the length.
   */
  verify(maxSlots: number, fail: (what: string) => never, each: (slot: number) => void): number {
    let listed = 0;
    for (let s = this.oldest; s !== LRU; s = this.after(s)) {
      if (this.#slots[(this.after(s) << STRIDE_SHIFT) + PREV] !== s) fail(`broken LRU links at slot ${s}`);
      if (++listed > maxSlots) fail('LRU list does not end');
      each(s);
    }
    return listed;
  }
}
