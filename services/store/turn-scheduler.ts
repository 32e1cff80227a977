import { TurnEnd } from '../shared/turn-batcher.ts';

/** What a connection does at the turns of the event loop. */
export interface TurnWork {
  /** Owned by the TurnScheduler: which of its lists the work is in (so each holds it once). */
  turnQueues: number;
  /** At the end of the turn it had work in: write the replies built during it. */
  endTurn(): void;
  /** At the end of the turn it read in, with the other held reads: run the read it held (CommandRunner.prefetchOrHold); `now` is what HeldReadsHooks.before() returned. */
  runHeldRead(now: number): void;
  /** In a later turn: run the lines the per-turn budget held back. */
  resumeTurn(): void;
}

/** What is done around the held reads of a turn (the command runner's prefetch and the release of their copies). */
export interface HeldReadsHooks {
  /** Before the first one runs; returns performance.now() once it is done, the time they start at. */
  before(): number;
  /** After the last one ran. */
  after(): void;
}

const ENDING = 1;
const RESUMING = 2;
const HOLDING = 4;

/**
 * Work waiting for a turn end, in the order it was added, each at most once (its bit in
 * turnQueues says it is queued). Kept from turn to turn with a spare: runEach swaps the
 * queued work out first, so work added while it runs (a connection asking for a later
 * turn) waits for the next call, and neither array is made again (a fresh array each turn,
 * grown push by push, was a third of the store's garbage at pipeline depth 1).
 */
class WorkQueue {
  readonly #flag: number;
  #items: (TurnWork | undefined)[] = [];
  #spare: (TurnWork | undefined)[] = [];
  #length = 0;

  constructor(flag: number) {
    this.#flag = flag;
  }

  get length(): number {
    return this.#length;
  }

  add(work: TurnWork): void {
    if ((work.turnQueues & this.#flag) !== 0) return;
    work.turnQueues |= this.#flag;
    this.#items[this.#length++] = work;
  }

  /** Calls `run` on each queued work in order, taking it off the queue first. */
  runEach(run: (work: TurnWork) => void): void {
    const items = this.#items;
    const n = this.#length;
    this.#items = this.#spare;
    this.#spare = items;
    this.#length = 0;
    try {
      for (let i = 0; i < n; i++) {
        const work = items[i]!;
        work.turnQueues &= ~this.#flag;
        run(work);
      }
    } finally {
      items.fill(undefined, 0, n); // no closed connection stays reachable from here
    }
  }
}

/**
 * Gives connections hooks on the event loop: the end of the current turn (TurnEnd:
 * setImmediate runs after the poll phase has read every ready socket, so replies go out
 * together, as Redis writes in beforeSleep, and a client with many connections is woken
 * once, not per reply) and a later turn, for a connection that used up its budget: it
 * continues only after the next poll phase has served everyone else.
 *
 * A third, at the same turn end: the reads of one command that connections held for it
 * run there, together, between HeldReadsHooks' before() and after() (OneLineReads).
 *
 * It keeps its own lists rather than a TurnBatcher each: one turn end serves them all,
 * resumed work first, then the held reads, so their replies join those of the
 * connections read in the same turn. With a batcher each, two setImmediates could fall in
 * one check phase in either order, and a connection that ended its turn in the first
 * could resume in the second, before the next poll phase has served the others.
 */
export class TurnScheduler {
  readonly #ending = new WorkQueue(ENDING);
  readonly #resuming = new WorkQueue(RESUMING);
  readonly #holding = new WorkQueue(HOLDING);
  readonly #heldReads: HeldReadsHooks;
  readonly #turnEnd = new TurnEnd(() => this.#run());
  /** The held reads' start time, for #runHeld. */
  #heldNow = 0;
  // Made once: a closure per turn would be garbage per turn.
  readonly #resume = (w: TurnWork): void => w.resumeTurn(); // it joins #ending
  readonly #runHeld = (w: TurnWork): void => w.runHeldRead(this.#heldNow); // it joins #ending
  readonly #end = (w: TurnWork): void => w.endTurn(); // may ask for a later turn: served at the next turn end

  constructor(heldReads: HeldReadsHooks) {
    this.#heldReads = heldReads;
  }

  #run(): void {
    if (this.#resuming.length > 0) this.#resuming.runEach(this.#resume);
    if (this.#holding.length > 0) {
      this.#heldNow = this.#heldReads.before();
      this.#holding.runEach(this.#runHeld);
      this.#heldReads.after();
    }
    this.#ending.runEach(this.#end);
  }

  atEndOfTurn(work: TurnWork): void {
    this.#ending.add(work);
    this.#turnEnd.request();
  }

  /** At the end of this turn, with the other held reads (before any connection's replies are written). */
  runHeldAtEndOfTurn(work: TurnWork): void {
    this.#holding.add(work);
    this.#turnEnd.request();
  }

  inLaterTurn(work: TurnWork): void {
    this.#resuming.add(work);
    this.#turnEnd.request();
  }
}
