// Index of the keys that have a time to live, so the active expiry cycle finds due keys
// without scanning the keyspace. Only keys with a TTL are in it: a plain key costs nothing.
//
// Keys are the engine's slot numbers. They are grouped in time buckets of BUCKET_MS; a
// min-heap orders the bucket ids. Each slot's position in its bucket array is kept in a
// typed array, so removal (DELETE, overwrite, new EXPIRE, eviction, lazy expiry) is an
// O(1) swap-remove and the index never holds stale entries. A bucket is drained only once
// it has fully elapsed, so every slot in it is due: a key leaves at most BUCKET_MS after
// it expired, plus the time the sweep takes to reach it. The positions live in segments of
// POS_SEGMENT_SLOTS, added one at a time, so the index never copies itself to grow; a
// bucket's array holds the keys set within BUCKET_MS of each other, so its growth copies
// stay small.

/** Width of a time bucket in milliseconds. */
export const BUCKET_MS = 250;

/** takeDue: nothing is due. */
export const NOTHING_DUE = -1;
/** takeDue: the step only dropped the id of a bucket that had emptied early; call again. */
export const DROPPED_EMPTY_BUCKET = -2;

const bucketId = (expiresAt: number): number => Math.floor(expiresAt / BUCKET_MS);

const POS_SEGMENT_SHIFT = 12;
const POS_SEGMENT_SLOTS = 1 << POS_SEGMENT_SHIFT;
const POS_SEGMENT_MASK = POS_SEGMENT_SLOTS - 1;

export class ExpiryIndex {
  readonly #buckets = new Map<number, number[]>();
  /** Min-heap of bucket ids. Ids of buckets that emptied early stay until popped or rebuilt. */
  #heap: number[] = [];
  /** Slot → its index in its bucket array: slot s at [s >> POS_SEGMENT_SHIFT][s & POS_SEGMENT_MASK]. */
  readonly #pos: Int32Array[] = [];
  #size = 0;

  /** Number of indexed slots (= keys with a TTL). */
  get size(): number {
    return this.#size;
  }

  add(slot: number, expiresAt: number): void {
    const id = bucketId(expiresAt);
    let bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      this.#heapPush(id);
      bucket = [];
      this.#buckets.set(id, bucket);
    }
    const segment = slot >>> POS_SEGMENT_SHIFT;
    while (segment >= this.#pos.length) this.#pos.push(new Int32Array(POS_SEGMENT_SLOTS));
    this.#pos[segment]![slot & POS_SEGMENT_MASK] = bucket.length;
    bucket.push(slot);
    this.#size++;
  }

  /** Removes `slot`, indexed under `expiresAt`. */
  remove(slot: number, expiresAt: number): void {
    const id = bucketId(expiresAt);
    const bucket = this.#buckets.get(id)!;
    const last = bucket.pop()!;
    if (last !== slot) {
      const at = this.#posOf(slot);
      bucket[at] = last;
      this.#pos[last >>> POS_SEGMENT_SHIFT]![last & POS_SEGMENT_MASK] = at;
    }
    this.#size--;
    // An empty bucket is dropped now; its id in the heap is skipped when popped.
    if (bucket.length === 0) this.#buckets.delete(id);
  }

  /** Whether a bucket has fully elapsed at `now` (or an emptied bucket's id waits to be dropped): takeDue has work. */
  hasDue(now: number): boolean {
    return this.#heap.length > 0 && this.#heap[0]! < bucketId(now);
  }

  /**
   * Keys in buckets that have fully elapsed at `now`: what the sweep could remove now and
   * has not reached yet. Walks only the heap's overdue part, O(overdue buckets).
   */
  overdue(now: number): number {
    const heap = this.#heap;
    const due = bucketId(now);
    const seen = new Set<number>(); // an id can sit in the heap twice (a bucket that emptied and came back)
    let keys = 0;
    const stack = heap.length > 0 ? [0] : [];
    while (stack.length > 0) {
      const i = stack.pop()!;
      const id = heap[i]!;
      if (id >= due) continue; // a min-heap: nothing below is due either
      if (!seen.has(id)) {
        seen.add(id);
        keys += this.#buckets.get(id)?.length ?? 0;
      }
      if (2 * i + 1 < heap.length) stack.push(2 * i + 1);
      if (2 * i + 2 < heap.length) stack.push(2 * i + 2);
    }
    return keys;
  }

  /**
   * One step of the expiry cycle at `now`: removes and returns a slot from the earliest
   * bucket that has fully elapsed (so its key is expired); DROPPED_EMPTY_BUCKET when the
   * step only dropped the id of a bucket that had emptied early; NOTHING_DUE when nothing
   * is due. O(log buckets) per step; each bucket id is pushed and popped once.
   */
  takeDue(now: number): number {
    const heap = this.#heap;
    // Bucket b has fully elapsed when (b + 1) * BUCKET_MS <= now.
    if (heap.length === 0 || heap[0]! >= bucketId(now)) return NOTHING_DUE;
    const id = heap[0]!;
    const bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      this.#heapPop();
      return DROPPED_EMPTY_BUCKET;
    }
    const slot = bucket.pop()!;
    this.#size--;
    if (bucket.length === 0) {
      this.#buckets.delete(id);
      this.#heapPop();
    }
    return slot;
  }

  /** Checks the index against the engine's view (`expiresAtOf(slot)`, 0 = no TTL); throws on the first violation. */
  verify(expectedSize: number, expiresAtOf: (slot: number) => number): void {
    let counted = 0;
    for (const [id, bucket] of this.#buckets) {
      if (bucket.length === 0) throw new Error(`expiry index: empty bucket ${id} kept`);
      for (let i = 0; i < bucket.length; i++) {
        const slot = bucket[i]!;
        const expiresAt = expiresAtOf(slot);
        if (this.#posOf(slot) !== i || expiresAt === 0 || bucketId(expiresAt) !== id) {
          throw new Error(`expiry index: slot ${slot} misplaced`);
        }
      }
      counted += bucket.length;
    }
    if (counted !== this.#size || this.#size !== expectedSize) {
      throw new Error(`expiry index: holds ${counted}, counts ${this.#size}, expected ${expectedSize}`);
    }
    const ids = new Set(this.#heap);
    for (const id of this.#buckets.keys()) {
      if (!ids.has(id)) throw new Error(`expiry index: bucket ${id} missing from the heap`);
    }
  }

  #posOf(slot: number): number {
    return this.#pos[slot >>> POS_SEGMENT_SHIFT]![slot & POS_SEGMENT_MASK]!;
  }

  #heapPush(id: number): void {
    // Ids of emptied buckets linger in the heap; rebuild it from the live buckets when they
    // outnumber them (amortized O(1): at least as many pushes happened since the last rebuild).
    if (this.#heap.length >= 2 * this.#buckets.size + 64) this.#rebuildHeap();
    const heap = this.#heap;
    let i = heap.length;
    heap.push(id);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]! <= id) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = id;
  }

  #heapPop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length > 0) this.#siftDown(0, last);
  }

  #siftDown(start: number, id: number): void {
    const heap = this.#heap;
    const n = heap.length;
    let i = start;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap[child + 1]! < heap[child]!) child++;
      if (heap[child]! >= id) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = id;
  }

  #rebuildHeap(): void {
    // Called by #heapPush before the new bucket is in #buckets; it appends the new id after.
    this.#heap = [];
    const heap = this.#heap;
    for (const id of this.#buckets.keys()) heap.push(id);
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) this.#siftDown(i, heap[i]!);
  }
}
