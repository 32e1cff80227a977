import { PrefetchedKeys } from '../engine/prefetched-keys.ts';
import { PREFETCH_BATCH, type StoreEngine } from '../engine/engine-api.ts';

/** Room for one turn's held reads: ~500 reads of a SET with a 100-byte value. */
const INPUT_BYTES = 64 * 1024;

/**
 * Reads of a single command, held until the end of the event-loop turn so that their
 * lookups are prefetched together.
 *
 * A read of many lines (a pipelining client) has its lookups overlapped with one another
 * (StoreEngine.prefetch: the CPU keeps several cache misses in flight). A read of one line
 * (a client that waits for each reply, the common case) has nothing in it to overlap
 * with: with 50 such clients each command paid its misses (bucket, slot, record) alone,
 * one after another, the largest share of the store's own time at depth 1. Held here, the
 * turn's one-line reads of every connection are prefetched as one batch and then run, in
 * the order they were read; their replies go out at the end of the turn they were read in.
 *
 * The bytes are copied (the shared read buffer is overwritten by the next read) into one
 * buffer, with each read's key, up to PREFETCH_BATCH reads a turn, and a copy is handed
 * out as its range of that buffer (no view object per read). A read that finds the batch
 * full runs at once, the way every read ran before.
 */
export class OneLineReads {
  readonly #input = Buffer.allocUnsafeSlow(INPUT_BYTES);
  #used = 0;
  /** The held reads' keys, and once prefetched, their lookup hints. */
  readonly keys = new PrefetchedKeys();
  #count = 0;

  /** Reads held since the last release(). */
  get count(): number {
    return this.#count;
  }

  /** The buffer the copies are in: hold()'s copy is input[at, at + n). */
  get input(): Buffer {
    return this.#input;
  }

  /**
   * Copies the read buf[start, end), whose one key is buf[keyStart, keyEnd); returns where
   * the copy starts in `input` (valid until release()), or -1 when the batch is full.
   */
  hold(buf: Buffer, start: number, end: number, keyStart: number, keyEnd: number): number {
    const at = this.#used;
    const k = this.#count;
    const n = end - start;
    if (k === PREFETCH_BATCH || at + n > INPUT_BYTES) return -1;
    buf.copy(this.#input, at, start, end);
    this.keys.starts[k] = at + keyStart - start;
    this.keys.ends[k] = at + keyEnd - start;
    this.#count = k + 1;
    this.#used = at + n;
    return at;
  }

  /** Once every read of the turn is in: the engine loads what their lookups will touch. */
  prefetch(engine: StoreEngine): void {
    if (this.#count > 1) this.keys.prefetch(engine, this.#input, this.#count);
  }

  /** The held reads have run (and copied whatever of them is still unread): the copies' buffer is reused. */
  release(): void {
    this.#count = 0;
    this.#used = 0;
    this.keys.clear();
  }
}
