// The store's background work, as Redis's serverCron does it: the active expiry sweep and
// a time-boxed step of any hash table resize, in short slices so clients are served in
// between.
//
// Every periodMs: a rehash step of at most rehashMs, which also gives dropped tables back to
// the OS a piece at a time (inserts and removals move buckets
// too; this finishes a resize on an idle store), then an expiry slice of at most sliceMs.
// While the expiry index still holds due keys after a slice (a storm of keys expiring
// together), the next slice follows with setImmediate instead of waiting for the period:
// the event loop reads and answers every ready connection between two slices, so a client
// waits at most about one slice, and the sweep keeps up with what is due (SPEC: an expired
// key leaves USAGE within 2 s) instead of removing a fixed number of keys per period.

/** What the background work drives. */
export interface BackgroundEngine {
  /** Removes due keys for at most maxWorkMs; returns how many. */
  sweepExpired(maxWorkMs: number): number;
  /** Whether the next sweepExpired call has work. */
  readonly expiryDue: boolean;
  /** Moves hash buckets and gives dropped tables back for at most maxWorkMs; returns whether either is still under way. */
  rehashFor(maxWorkMs: number): boolean;
}

export interface BackgroundWorkOptions {
  readonly engine: BackgroundEngine;
  /** Period of the timer (the sweep of a store with nothing due). */
  readonly periodMs: number;
  /** Longest expiry slice. */
  readonly sliceMs: number;
  /** Longest rehash step per period. */
  readonly rehashMs: number;
}

export class BackgroundWork {
  readonly #engine: BackgroundEngine;
  readonly #periodMs: number;
  readonly #sliceMs: number;
  readonly #rehashMs: number;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  /** Slices run back to back because keys were still due (a storm), for tests and metrics. */
  catchUpSlices = 0;

  constructor({ engine, periodMs, sliceMs, rehashMs }: BackgroundWorkOptions) {
    this.#engine = engine;
    this.#periodMs = periodMs;
    this.#sliceMs = sliceMs;
    this.#rehashMs = rehashMs;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.tick(), this.#periodMs);
    this.#timer.unref();
  }

  /** The periodic work; the timer calls it, and a test may too. */
  tick(): void {
    this.#engine.rehashFor(this.#rehashMs);
    if (this.#immediate === undefined) this.#slice(); // a catch-up already under way keeps its pace
  }

  stop(): void {
    clearInterval(this.#timer);
    clearImmediate(this.#immediate);
    this.#timer = this.#immediate = undefined;
  }

  #slice(): void {
    this.#immediate = undefined;
    this.#engine.sweepExpired(this.#sliceMs);
    if (this.#engine.expiryDue) {
      this.catchUpSlices++;
      this.#immediate = setImmediate(() => this.#slice());
      this.#immediate.unref();
    }
  }
}
