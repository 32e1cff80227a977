import type { HeldCopies } from '../../protocol/line-framer.ts';
import { freeNow } from '../../shared/free-now.ts';

/** A read's most (the poller's and Node's read size): one copy holds what is left of any read. */
const COPY_BYTES = 64 * 1024;
/** Free copies kept for reuse (2 MiB); past that, a framed copy is freed. */
const MAX_FREE = 32;

/**
 * The copies connections make of input they hold past a read (the rest of a read whose
 * lines wait for a later turn: LineFramer.ownHeldInput), reused. A fresh 64 KiB buffer per
 * wait was an allocation at glibc's mmap threshold (malloc-tuning.ts): a mapping, its page
 * faults and, once collected, an unmapping with its TLB shootdown, for every read that
 * waited in line, which under 16 pipelining loaders made the load ~18% slower. The copies
 * also hold a line that spans reads once put together (a SET of a large value): one larger
 * than a copy is freed as soon as it has run (free-now.ts), not left for a collection.
 */
export class HeldInputPool implements HeldCopies {
  readonly #free: Buffer[] = [];

  /** Buffers kept for reuse. */
  get freeCount(): number {
    return this.#free.length;
  }

  take(bytes: number): Buffer {
    if (bytes > COPY_BYTES) return Buffer.allocUnsafeSlow(bytes);
    return this.#free.pop() ?? Buffer.allocUnsafeSlow(COPY_BYTES);
  }

  give(buf: Buffer): void {
    if (buf.length === COPY_BYTES && this.#free.length < MAX_FREE) this.#free.push(buf);
    else freeNow(buf);
  }

  /** Frees the copies kept (a store standing idle): their memory leaves the process. */
  releaseFree(): void {
    for (let i = 0; i < this.#free.length; i++) freeNow(this.#free[i]!);
    this.#free.length = 0;
  }
}
