// The engine's hash table: a power-of-two number of buckets, each the first slot of a chain
// linked through the slots' CHAIN field (slot-layout.ts), so a key is found from its hash
// with no object per key.
//
// It is resized incrementally, as Redis's dict.c does, so that a store of tens of millions
// of keys never stops for a copy: a resize allocates the new bucket array (zeroed lazily by
// the allocator) and moves the old buckets over a few at a time, on every insert and
// removal (rehashStepBuckets) and in time-boxed steps from the store's timer (rehashFor).
// While it migrates, bucket b of the old table has moved once b < #migrated, so a key's
// chain is in the new table when (hash & oldMask) < #migrated and in the old one
// otherwise: a lookup still walks one chain. The table doubles when there are more keys
// than buckets and shrinks (to twice the next power of two above the keys) when they fall
// below an eighth of the buckets. A dropped table goes back to the OS a step at a time in
// the timer's steps too (#reapFor). A snapshot load sizes the table for its file's keys in
// one go instead (reserve): nothing is served yet, and a rehash while loading would move
// every key again.

import { resizableBuffer } from './resizable-buffer.ts';
import { SLOT } from './slot-layout.ts';

const STRIDE_SHIFT = SLOT.STRIDE_SHIFT;
const HASH = SLOT.HASH;
const CHAIN = SLOT.CHAIN;

/** Default smallest hash table. */
export const MIN_BUCKETS = 1024;
/**
 * Old buckets moved per insert or removal during a resize. At least one per insert is what
 * guarantees a doubling has finished before the keys outgrow the new table.
 */
export const REHASH_STEP_BUCKETS = 2;
/** Bucket moves per millisecond of a rehashFor budget, so a frozen or fake clock still bounds a call. */
export const REHASH_BUCKETS_PER_MS = 20_000;
/**
 * A dropped bucket table is given back to the OS this many bytes at a time, in the store's
 * time-boxed background step (see #reapFor): ~0.2 ms each, where freeing a 32 MiB table in
 * one go costs ~2.3 ms, inside whichever garbage collection frees it.
 */
export const REAP_STEP_BYTES = 1024 * 1024;
// A shrinking resize visits at most this many empty buckets per bucket it is asked to move
// (a table being shrunk is mostly empty), as dict.c's empty_visits.
const EMPTY_VISITS_PER_STEP = 16;
/** Bucket tables are views of resizable buffers (see #newTable); this one too, so every table has one element kind. */
const NO_TABLE = new Int32Array(resizableBuffer(0, 0));

/** Where the hash table is: its size, and while it is being resized, how far the move has got. */
export interface TableState {
  readonly buckets: number;
  /** The size being moved to; 0 when no resize is under way. */
  readonly nextBuckets: number;
  /** Old buckets already moved. */
  readonly movedBuckets: number;
}

/** The smallest power of two >= n (n >= 1). */
export function powerOfTwoAtLeast(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

export class BucketTable {
  /** The engine's slot fields (a view that tracks its resizable buffer, so it is never replaced). */
  readonly #slots: Int32Array;
  readonly #now: () => number;
  readonly #minBuckets: number;
  /** The table shrinks no smaller than this: #minBuckets, or what reserve() made room for until endReserve(). */
  #floorBuckets: number;
  readonly #rehashStepBuckets: number;

  /** Bucket → first slot of its chain (0 = empty). */
  #buckets: Int32Array;
  #bucketMask: number;
  /** The table being resized to (NO_TABLE when none), and its mask. */
  #next: Int32Array = NO_TABLE;
  #nextMask = 0;
  /** Buckets of #buckets already moved to #next (0 when no resize is under way). */
  #migrated = 0;
  /** Buffers of dropped tables, not yet given back in full (see #reapFor); the last is shrunk first. */
  readonly #reaping: ArrayBuffer[] = [];

  constructor(slots: Int32Array, now: () => number, minBuckets: number, rehashStepBuckets: number) {
    this.#slots = slots;
    this.#now = now;
    this.#minBuckets = minBuckets;
    this.#floorBuckets = minBuckets;
    this.#rehashStepBuckets = rehashStepBuckets;
    this.#buckets = this.#newTable(minBuckets);
    this.#bucketMask = minBuckets - 1;
  }

  get state(): TableState {
    return { buckets: this.#bucketMask + 1, nextBuckets: this.#next.length, movedBuckets: this.#migrated };
  }

  /** Bytes of the bucket arrays held (during a resize, both tables). */
  get bytes(): number {
    return this.#buckets.byteLength + this.#next.byteLength;
  }

  /** Bytes of dropped tables not yet given back (see #reapFor): held, but no longer part of the footprint. */
  get reapingBytes(): number {
    let bytes = 0;
    for (const buffer of this.#reaping) bytes += buffer.byteLength;
    return bytes;
  }

  /** The first slot of hash h's chain (0 for none), in the new table once its old bucket has moved. */
  head(h: number): number {
    const b = h & this.#bucketMask;
    return b < this.#migrated ? this.#next[h & this.#nextMask]! : this.#buckets[b]!;
  }

  /**
   * Chains a new key's slot (its HASH field already h) into its bucket, after the step of
   * resize that `live` keys call for: the step may move the bucket the slot goes to.
   */
  insert(slot: number, h: number, live: number): void {
    this.keysChanged(live);
    const slots = this.#slots;
    const o = slot << STRIDE_SHIFT;
    const b = h & this.#bucketMask;
    if (b < this.#migrated) {
      const nb = h & this.#nextMask;
      slots[o + CHAIN] = this.#next[nb]!;
      this.#next[nb] = slot;
    } else {
      slots[o + CHAIN] = this.#buckets[b]!;
      this.#buckets[b] = slot;
    }
  }

  /** Takes the slot (hash h) out of its bucket's chain. */
  remove(slot: number, h: number): void {
    const slots = this.#slots;
    let table = this.#buckets;
    let b = h & this.#bucketMask;
    if (b < this.#migrated) {
      table = this.#next;
      b = h & this.#nextMask;
    }
    const following = slots[(slot << STRIDE_SHIFT) + CHAIN]!;
    let s = table[b]!;
    if (s === slot) {
      table[b] = following;
    } else {
      while (slots[(s << STRIDE_SHIFT) + CHAIN] !== slot) s = slots[(s << STRIDE_SHIFT) + CHAIN]!;
      slots[(s << STRIDE_SHIFT) + CHAIN] = following;
    }
  }

  /** After an insert or a removal (`live` keys now): a step of the resize under way, or a resize if one is due. */
  keysChanged(live: number): void {
    if (this.#next !== NO_TABLE) this.#rehashStep(this.#rehashStepBuckets, live);
    else this.#maybeResize(live);
  }

  /**
   * Background step of a resize: moves old buckets to the new table for up to maxWorkMs of
   * the engine's clock and at most REHASH_BUCKETS_PER_MS * maxWorkMs buckets (at least
   * one), after a step of giving dropped tables back (#reapFor). Returns whether a resize
   * or a give-back is still under way. Inserts and removals move buckets too; this is what
   * finishes a resize on a store that is otherwise idle, and all that frees tables.
   */
  rehashFor(maxWorkMs: number, live: number): boolean {
    const start = this.#now();
    if (this.#reaping.length > 0) this.#reapFor(start, maxWorkMs);
    if (this.#next === NO_TABLE) return this.#reaping.length > 0;
    let budget = Math.max(1, Math.ceil(maxWorkMs * REHASH_BUCKETS_PER_MS));
    while (budget > 0 && this.#next !== NO_TABLE) {
      const n = Math.min(budget, 256);
      this.#rehashStep(n, live);
      budget -= n;
      if (this.#now() - start >= maxWorkMs) break;
    }
    return this.#next !== NO_TABLE || this.#reaping.length > 0;
  }

  /** Bytes one more key (`live` held now) would add: a new table when the keys are about to outgrow the buckets, as #maybeResize makes it. */
  newKeyBytes(live: number): number {
    return this.#next === NO_TABLE && live + 1 > this.#bucketMask + 1 ? powerOfTwoAtLeast(live + 1) * 4 : 0;
  }

  /**
   * Start-up hint on an empty engine (a snapshot load): room for `keys` keys in one table,
   * which does not shrink below that until endReserve(). Returns the buckets reserved for.
   */
  reserve(keys: number): number {
    const target = powerOfTwoAtLeast(keys);
    if (target > this.#bucketMask + 1) {
      // No keys, so nothing to move: any resize under way is dropped with the old table.
      this.#dropTable(this.#buckets);
      this.#dropTable(this.#next);
      this.#buckets = this.#newTable(target);
      this.#bucketMask = target - 1;
      this.#next = NO_TABLE;
      this.#nextMask = 0;
      this.#migrated = 0;
    }
    this.#floorBuckets = Math.max(this.#floorBuckets, this.#bucketMask + 1);
    return target;
  }

  /** Ends what reserve() held: the table may shrink again, and a shrink starts now when `live` keys are few for it. */
  endReserve(live: number): void {
    this.#floorBuckets = this.#minBuckets;
    if (this.#next === NO_TABLE) this.#maybeResize(live);
  }

  /**
   * Checks every chain (each slot chained once, where its hash says) and the table's size
   * against `live` keys, calling `fail` on the first disagreement; returns the slots chained.
   */
  verify(live: number, fail: (what: string) => never): number {
    const slots = this.#slots;
    const chainOf = (s: number): number => slots[(s << STRIDE_SHIFT) + CHAIN]!;
    const hashOf = (s: number): number => slots[(s << STRIDE_SHIFT) + HASH]!;
    let chained = 0;
    const mask = this.#bucketMask;
    const migrating = this.#next !== NO_TABLE;
    if (!migrating && this.#migrated !== 0) fail(`${this.#migrated} buckets counted as moved with no resize under way`);
    // Each key is chained once, where its hash says: old bucket b until b has been moved
    // (b < #migrated), then the new table's bucket.
    for (let b = 0; b <= mask; b++) {
      if (b < this.#migrated && this.#buckets[b] !== 0) fail(`old bucket ${b} was moved but still holds slots`);
      for (let s = this.#buckets[b]!; s !== 0; s = chainOf(s)) {
        if (++chained > live) fail('hash chains hold more slots than the LRU list');
        if ((hashOf(s) & mask) !== b) fail(`slot ${s} chained in the wrong bucket`);
      }
    }
    for (let b = 0; b < this.#next.length; b++) {
      for (let s = this.#next[b]!; s !== 0; s = chainOf(s)) {
        if (++chained > live) fail('hash chains hold more slots than the LRU list');
        const h = hashOf(s);
        if ((h & this.#nextMask) !== b || (h & mask) >= this.#migrated) fail(`slot ${s} chained in the wrong bucket of the new table`);
      }
    }
    const size = mask + 1;
    if (powerOfTwoAtLeast(size) !== size || size < this.#minBuckets) fail(`table of ${size} buckets`);
    if (migrating) {
      if (this.#nextMask !== this.#next.length - 1 || powerOfTwoAtLeast(this.#next.length) !== this.#next.length) fail(`new table of ${this.#next.length} buckets`);
      if (this.#migrated >= size) fail(`resize moved ${this.#migrated} of ${size} buckets without finishing`);
    } else {
      // A finished resize (or the key count changing) starts the next one when it is due.
      if (live > size) fail(`${live} keys in ${size} buckets with no resize under way`);
      if (size > this.#floorBuckets && live * 8 < size) fail(`${live} keys in ${size} buckets with no shrink under way`);
    }
    return chained;
  }

  /** Starts a resize when the `live` keys outgrow the table or fall below an eighth of it. */
  #maybeResize(live: number): void {
    const size = this.#bucketMask + 1;
    let target: number;
    if (live > size) target = powerOfTwoAtLeast(live);
    else if (live * 8 < size && size > this.#floorBuckets) target = Math.max(this.#floorBuckets, 2 * powerOfTwoAtLeast(Math.max(1, live)));
    else return;
    this.#next = this.#newTable(target);
    this.#nextMask = target - 1;
    this.#migrated = 0;
  }

  /**
   * Moves up to n non-empty old buckets to the new table, visiting at most
   * EMPTY_VISITS_PER_STEP * n empty ones (always at least one bucket), and finishes the
   * resize after the last.
   */
  #rehashStep(n: number, live: number): void {
    const old = this.#buckets;
    const next = this.#next;
    const nextMask = this.#nextMask;
    const slots = this.#slots;
    let b = this.#migrated;
    let emptyVisits = n * EMPTY_VISITS_PER_STEP;
    while (b < old.length) {
      let s = old[b]!;
      b++;
      if (s === 0) {
        if (--emptyVisits === 0) break;
        continue;
      }
      old[b - 1] = 0;
      do {
        const o = s << STRIDE_SHIFT;
        const following = slots[o + CHAIN]!;
        const nb = slots[o + HASH]! & nextMask;
        slots[o + CHAIN] = next[nb]!;
        next[nb] = s;
        s = following;
      } while (s !== 0);
      if (--n === 0) break;
    }
    this.#migrated = b;
    if (b === old.length) {
      this.#dropTable(old);
      this.#buckets = next;
      this.#bucketMask = nextMask;
      this.#next = NO_TABLE;
      this.#nextMask = 0;
      this.#migrated = 0;
      this.#maybeResize(live);
    }
  }

  /**
   * Gives dropped tables back to the OS, REAP_STEP_BYTES at a time, for up to maxWorkMs of
   * the engine's clock from `start` (at least one step). A table left to the collector
   * would be freed whole inside one of its pauses, on the serving thread.
   */
  #reapFor(start: number, maxWorkMs: number): void {
    const reaping = this.#reaping;
    do {
      const buffer = reaping.at(-1)!;
      const keep = Math.max(0, buffer.byteLength - REAP_STEP_BYTES);
      buffer.resize(keep);
      if (keep === 0) reaping.pop();
    } while (reaping.length > 0 && this.#now() - start < maxWorkMs);
  }

  /**
   * A zeroed bucket table: fresh pages of the OS, touched as buckets fill, so a large one
   * costs no copy. Its buffer is resizable only so that it can be given back in steps once
   * dropped (#reapFor); it never grows.
   */
  #newTable(buckets: number): Int32Array {
    return new Int32Array(resizableBuffer(buckets * 4, buckets * 4));
  }

  /** Lets go of a bucket table: its bytes go back to the OS in the background steps (#reapFor). */
  #dropTable(table: Int32Array): void {
    if (table.byteLength > 0) this.#reaping.push(table.buffer as ArrayBuffer);
  }
}
