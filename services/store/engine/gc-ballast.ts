// Keeps the engine's growth from starting full garbage collections.
//
// V8 counts the memory of ArrayBuffers as external memory and starts a full collection
// each time that count has grown 64 MiB past its lowest figure since the last one, whether
// or not any JavaScript object could be freed. Every byte of the engine is in ArrayBuffers,
// so loading 8,000,000 keys (~1.9 GiB) started ~30 full collections: each a 1-2 ms pause on
// the serving thread, often followed by a read that took 3 ms more.
//
// The engine's growth is bounded anyway (its footprint limit), so it is told to V8 once, at
// start-up: a ballast of buffers that add up to that limit but are never written, so they
// cost address space and no resident memory (the idea of Go's "memory ballast"). The engine
// takes bytes here before its ArrayBuffers grow (`take`) and gives them back after they
// shrink (`give`); the ballast drops or adds whole steps to match, before the growth, so the
// count V8 sees never rises above its start-up figure. A step is BALLAST_STEP_BYTES, half
// of V8's 64 MiB, so most growth costs no call here at all.
//
// The other half is V8's heap-growing factor, set by main.ts: with a JavaScript heap of
// ~11 MB V8 also starts a full collection every few hundred milliseconds for the heap's own
// limit. Both cut a load's worst PING: see docs/benchmarks.md#pauses-during-growth.
//
// When the ballast is used up (an engine whose footprint limit is above MAX_BALLAST_BYTES,
// or more than the machine would map at start-up) the engine grows as it would without
// one: V8 counts the rest and collects for it as it always did.

/** The ballast shrinks and grows in steps of this many bytes (V8 collects every 64 MiB of growth). */
export const BALLAST_STEP_BYTES = 32 * 1024 * 1024;
/**
 * The largest ballast: each step is a mapping of its own, and a process may hold 65,530 by
 * default (vm.max_map_count). An engine whose footprint limit is larger is covered for its
 * first 32 GiB of growth, and V8 counts the rest.
 */
export const MAX_BALLAST_BYTES = 1024 * BALLAST_STEP_BYTES;

export class GcBallast {
  /** What the ballast was asked to hold at start-up. */
  readonly sizeBytes: number;
  /**
   * The ballast, in steps: each a zero-filled buffer, which glibc's calloc maps from the OS
   * for a request this large (above its largest mmap threshold, 32 MiB) and so never writes.
   * A step is let go of with transfer(0), which unmaps it and lowers V8's count at once
   * (shrinking one resizable buffer instead writes zeros over the bytes it drops: measured
   * ~20 ms of page faults per 32 MiB, on the serving thread).
   */
  readonly #steps: ArrayBuffer[] = [];
  /** Bytes taken and not given back: the engine's footprint, which its invariant check compares. */
  #taken = 0;

  /** A ballast of `bytes` (rounded down to whole steps, at most MAX_BALLAST_BYTES); `bytes` 0 makes none. */
  constructor(bytes: number) {
    const steps = Math.max(0, Math.floor(Math.min(bytes, MAX_BALLAST_BYTES) / BALLAST_STEP_BYTES));
    try {
      for (let i = 0; i < steps; i++) this.#steps.push(new ArrayBuffer(BALLAST_STEP_BYTES));
    } catch {
      // The OS would not map that much: run with what it gave (see above).
    }
    this.sizeBytes = this.#steps.length * BALLAST_STEP_BYTES;
  }

  /** Bytes the ballast holds now. */
  get heldBytes(): number {
    return this.#steps.length * BALLAST_STEP_BYTES;
  }

  /** Bytes taken and not given back. */
  get takenBytes(): number {
    return this.#taken;
  }

  /**
   * Bytes given up by the ballast and not yet taken by the engine; negative when the engine
   * holds more than the ballast gave up (it ran out, or could not be made).
   */
  get #credit(): number {
    return this.sizeBytes - this.heldBytes - this.#taken;
  }

  /** Before the engine allocates or commits `bytes` more of ArrayBuffer memory. */
  take(bytes: number): void {
    this.#taken += bytes;
    while (this.#credit < 0 && this.#steps.length > 0) this.#steps.pop()!.transfer(0);
  }

  /** After the engine has let go of `bytes` of ArrayBuffer memory (or will, at the next collection). */
  give(bytes: number): void {
    this.#taken -= bytes;
    // Keep up to two steps of credit, so a SET and a DELETE at a step's edge do not allocate each time.
    while (this.#credit >= 2 * BALLAST_STEP_BYTES && this.heldBytes < this.sizeBytes) this.#steps.push(new ArrayBuffer(BALLAST_STEP_BYTES));
  }

  /** Resizes `buffer`, one of the engine's resizable ArrayBuffers, to `bytes`, taking or giving the difference. */
  resize(buffer: ArrayBuffer, bytes: number): void {
    const delta = bytes - buffer.byteLength;
    if (delta > 0) this.take(delta);
    buffer.resize(bytes);
    if (delta < 0) this.give(-delta);
  }
}
