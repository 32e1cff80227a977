// Index of the keys that have a time to live, so the active expiry cycle finds due keys
// without scanning the keyspace. Only keys with a TTL are in it: a plain key costs nothing.
//
// Entries are grouped in time buckets of BUCKET_MS; a min-heap orders the bucket ids. Each
// entry knows its bucket array and its position in it, so removal (DELETE, overwrite, new
// EXPIRE, eviction, lazy expiry) is an O(1) swap-remove and the index never holds stale
// entries (which would pin old values in memory). A bucket is drained only once it has
// fully elapsed, so every entry in it is due: a key leaves at most BUCKET_MS after it
// expired, plus the sweep period.

/** Width of a time bucket in milliseconds. */
export const BUCKET_MS = 250;

/** The stored form of a key with a TTL (a key without TTL is stored as its bare value). */
export class TtlEntry {
  /** The engine's slot for the key. */
  slot: number;
  /** The value as the engine stores it. */
  value: string;
  /** Absolute expiry time on the engine's clock, in milliseconds. */
  expiresAt: number;
  /** The bucket array holding this entry, and its index there (null when not indexed). */
  bucket: TtlEntry[] | null = null;
  pos = 0;

  constructor(slot: number, value: string, expiresAt: number) {
    this.slot = slot;
    this.value = value;
    this.expiresAt = expiresAt;
  }
}

const bucketId = (expiresAt: number): number => Math.floor(expiresAt / BUCKET_MS);

export class ExpiryIndex {
  readonly #buckets = new Map<number, TtlEntry[]>();
  /** Min-heap of bucket ids. Ids of buckets that emptied early stay until popped or rebuilt. */
  #heap: number[] = [];
  #size = 0;

  /** Number of indexed entries (= keys with a TTL). */
  get size(): number {
    return this.#size;
  }

  add(entry: TtlEntry): void {
    const id = bucketId(entry.expiresAt);
    let bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      this.#heapPush(id);
      bucket = [];
      this.#buckets.set(id, bucket);
    }
    entry.bucket = bucket;
    entry.pos = bucket.length;
    bucket.push(entry);
    this.#size++;
  }

  remove(entry: TtlEntry): void {
    const bucket = entry.bucket;
    if (bucket === null) return;
    const last = bucket.pop()!;
    if (last !== entry) {
      bucket[entry.pos] = last;
      last.pos = entry.pos;
    }
    entry.bucket = null;
    this.#size--;
    // An empty bucket is dropped now; its id in the heap is skipped when popped.
    if (bucket.length === 0) this.#buckets.delete(bucketId(entry.expiresAt));
  }

  /**
   * One step of the expiry cycle at `now`: removes and returns an entry from the earliest
   * bucket that has fully elapsed (so the entry is expired); null when the step only
   * dropped the id of a bucket that had emptied early (call again); undefined when nothing
   * is due. O(log buckets) per step; each bucket id is pushed and popped once.
   */
  takeDue(now: number): TtlEntry | null | undefined {
    const heap = this.#heap;
    // Bucket b has fully elapsed when (b + 1) * BUCKET_MS <= now.
    if (heap.length === 0 || heap[0]! >= bucketId(now)) return undefined;
    const id = heap[0]!;
    const bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      this.#heapPop();
      return null;
    }
    const entry = bucket.pop()!;
    entry.bucket = null;
    this.#size--;
    if (bucket.length === 0) {
      this.#buckets.delete(id);
      this.#heapPop();
    }
    return entry;
  }

  /** Checks the index structure against the engine's view; throws on the first violation. */
  verify(expectedSize: number): void {
    let counted = 0;
    for (const [id, bucket] of this.#buckets) {
      if (bucket.length === 0) throw new Error(`expiry index: empty bucket ${id} kept`);
      for (let i = 0; i < bucket.length; i++) {
        const entry = bucket[i]!;
        if (entry.bucket !== bucket || entry.pos !== i || bucketId(entry.expiresAt) !== id) {
          throw new Error(`expiry index: entry for slot ${entry.slot} misplaced`);
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
