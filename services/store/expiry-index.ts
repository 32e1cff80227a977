// Index of the keys that have a time to live, so the active expiry cycle finds due keys
// without scanning the keyspace. Only keys with a TTL are in it: a plain key costs nothing.
//
// Keys are the engine's slot numbers. They are grouped in time buckets of BUCKET_MS; a
// min-heap orders the bucket ids. Each slot's position in its bucket array is kept in a
// typed array, so removal (DELETE, overwrite, new EXPIRE, eviction, lazy expiry) is an
// O(1) swap-remove and the index never holds stale entries. A bucket is drained only once
// it has fully elapsed, so every slot in it is due: a key leaves at most BUCKET_MS after
// it expired, plus the sweep period.

/** Width of a time bucket in milliseconds. */
export const BUCKET_MS = 250;

/** takeDue: nothing is due. */
export const NOTHING_DUE = -1;
/** takeDue: the step only dropped the id of a bucket that had emptied early; call again. */
export const DROPPED_EMPTY_BUCKET = -2;

const bucketId = (expiresAt: number): number => Math.floor(expiresAt / BUCKET_MS);

export class ExpiryIndex {
  readonly #buckets = new Map<number, number[]>();
  /** Min-heap of bucket ids. Ids of buckets that emptied early stay until popped or rebuilt. */
  #heap: number[] = [];
  /** Slot → its index in its bucket array. */
  #pos = new Int32Array(1024);
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
    if (slot >= this.#pos.length) {
      const grown = new Int32Array(Math.max(slot + 1, this.#pos.length * 2));
      grown.set(this.#pos);
      this.#pos = grown;
    }
    this.#pos[slot] = bucket.length;
    bucket.push(slot);
    this.#size++;
  }

  /** Removes `slot`, indexed under `expiresAt`. */
  remove(slot: number, expiresAt: number): void {
    const id = bucketId(expiresAt);
    const bucket = this.#buckets.get(id)!;
    const last = bucket.pop()!;
    if (last !== slot) {
      const at = this.#pos[slot]!;
      bucket[at] = last;
      this.#pos[last] = at;
    }
    this.#size--;
    // An empty bucket is dropped now; its id in the heap is skipped when popped.
    if (bucket.length === 0) this.#buckets.delete(id);
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
        if (this.#pos[slot] !== i || expiresAt === 0 || bucketId(expiresAt) !== id) {
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
