import { PREFETCH_BATCH, type StoreEngine } from './engine-api.ts';

/**
 * The keys of one batch the engine prefetched, in the order their lines run, with what the
 * prefetch found for each (StoreEngine.prefetch's `found`). As each line runs, its GET
 * hands that hint to the engine, which then checks the key where the prefetch found it
 * instead of hashing it again and walking its bucket: the prefetch has done both already.
 *
 * The engine checks a hint before using it, so a hint that no longer fits (the batch's
 * buffer was overwritten, a SET earlier in the batch moved the key) costs only the lookup
 * it would have saved. A key is matched by its place in the batch's buffer: lines that are
 * not in the batch (a line split over two reads, delivered from a copy) get none.
 */
export class PrefetchedKeys {
  /** Key i of the batch is buffer[starts[i], ends[i]); filled by whoever gathers the batch. */
  readonly starts = new Int32Array(PREFETCH_BATCH);
  readonly ends = new Int32Array(PREFETCH_BATCH);
  readonly #found = new Int32Array(PREFETCH_BATCH);
  /** The buffer the batch's ranges are in; null when there is no batch. */
  #buffer: Buffer | null = null;
  #count = 0;
  /** The first key of the batch not yet asked for. */
  #next = 0;

  /** The engine loads the memory the first `count` keys will touch (ranges of `buffer` in starts/ends). */
  prefetch(engine: StoreEngine, buffer: Buffer, count: number): void {
    engine.prefetch(buffer, this.starts, this.ends, count, this.#found);
    this.#buffer = buffer;
    this.#count = Math.min(count, PREFETCH_BATCH);
    this.#next = 0;
  }

  /** No batch: its buffer is about to be reused. */
  clear(): void {
    this.#buffer = null;
  }

  /**
   * The hint for the key buf[ks, ke), or 0: lines run in order, so the keys before it in
   * the batch (lines that ran without a lookup, or failed to parse) are passed over.
   */
  hintFor(buf: Buffer, ks: number, ke: number): number {
    if (buf !== this.#buffer) return 0;
    const starts = this.starts;
    const count = this.#count;
    let i = this.#next;
    while (i < count && starts[i]! < ks) i++;
    if (i === count || starts[i] !== ks || this.ends[i] !== ke) {
      this.#next = i;
      return 0;
    }
    this.#next = i + 1;
    return this.#found[i]!;
  }
}
