// Gives malloc's free memory back to the OS once the store goes idle.
//
// The store's records never pass through malloc (the arena's pages are mappings of their
// own), but everything else does: V8's compiler threads, Node's buffers, a burst of
// connections. What they free below the mmap threshold stays resident in glibc's heaps
// until something trims them: after start-up ~30-40 MiB of the compiler's work (the warm-up
// tiers the command path up on V8's worker threads, each with a malloc arena of its own).
// malloc_trim(0) hands those pages back, but it takes 0.3-9 ms and holds each arena's lock
// while it trims it, so it runs on a thread of libuv's pool (the add-on's mallocTrim), and
// only when the store has been idle for a whole period: never in the middle of a load,
// whose serving thread would wait on the lock. An idle spell gets TRIMS_PER_IDLE_SPELL trims,
// a period apart (V8's compiler threads may still be finishing the warm-up's work after the
// first; malloc_trim reports memory given back after nearly every call, so that cannot say
// when to stop), then none until activity rearms it.
//
// Before each trim of an idle spell (the one after start-up too: loading the modules leaves
// garbage and a grown young generation), on the serving thread, the store gives back what
// it holds itself (`release`, told which trim of the spell comes next): the record arena's
// spare pages (up to a page and a half per size class, ~14 MiB at a 64 MiB cap once every
// key is deleted; with the add-on none, only the emptied pages' mappings), and what waits for the collector (idle-collection.ts), before the first
// trim.

/** Trims per idle spell. */
export const TRIMS_PER_IDLE_SPELL = 3;
/**
 * Periods after an idle spell's last trim before a nudge (a request to the admin port)
 * starts another: a scrape compiles code and grows the young generation again (~5-8 MiB
 * on an idle store), but a scraper that asks every second must not set off a collection
 * every few seconds. Prometheus's usual 15-60 s interval gets one after every scrape.
 */
export const NUDGE_REARM_PERIODS = 10;

export interface IdleMallocTrimOptions {
  /** Trims malloc's heaps off this thread, then calls done (1: memory went back, 0: none, -1: no glibc). */
  readonly trim: (done: (result: number) => void) => void;
  /** A count that moves whenever the store serves (bytes received, connections): idle when it stands still. */
  readonly activity: () => number;
  /** A count of things that leave the store idle but may have grown its memory (requests to its admin port): one starts a new spell once the last has been over for NUDGE_REARM_PERIODS. */
  readonly nudges?: () => number;
  /** How long the store must stand idle before a trim, in ms. */
  readonly periodMs: number;
  /** Run on this thread before each trim of an idle spell, with the trim's index in the spell (0 first): memory the store gives back itself. */
  readonly release?: (trimOfSpell: number) => void;
}

export class IdleMallocTrim {
  readonly #trim: (done: (result: number) => void) => void;
  readonly #activity: () => number;
  readonly #periodMs: number;
  readonly #release: ((trimOfSpell: number) => void) | undefined;
  readonly #nudges: (() => number) | undefined;
  /** The nudge count when the last spell started. */
  #nudgesSeen = 0;
  /** Ticks since the last spell's last trim. */
  #ticksSinceSpell = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The activity count at the last tick. */
  #seen: number;
  /** Trims made since the activity count last moved. */
  #spellTrims = 0;
  #running = false;
  /** Trims made. */
  trims = 0;
  /** Of those, trims that gave memory back. */
  released = 0;

  constructor({ trim, activity, nudges, periodMs, release }: IdleMallocTrimOptions) {
    this.#trim = trim;
    this.#release = release;
    this.#nudges = nudges;
    this.#nudgesSeen = nudges?.() ?? 0;
    this.#activity = activity;
    this.#periodMs = periodMs;
    this.#seen = activity();
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#tick(), this.#periodMs);
    this.#timer.unref();
  }

  #tick(): void {
    const now = this.#activity();
    if (now !== this.#seen) {
      this.#seen = now;
      this.#spellTrims = 0;
      this.#nudgesSeen = this.#nudges?.() ?? 0;
      return;
    }
    if (this.#spellTrims >= TRIMS_PER_IDLE_SPELL) {
      const nudges = this.#nudges?.() ?? 0;
      if (++this.#ticksSinceSpell < NUDGE_REARM_PERIODS || nudges === this.#nudgesSeen) return;
      this.#nudgesSeen = nudges;
      this.#spellTrims = 0;
    }
    if (this.#running) return;
    this.#ticksSinceSpell = 0;
    this.#running = true;
    this.#release?.(this.#spellTrims);
    this.#spellTrims++;
    this.#trim((result) => {
      this.#running = false;
      this.trims++;
      if (result === 1) this.released++;
    });
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
