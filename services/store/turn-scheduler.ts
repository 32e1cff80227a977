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
 * A list of work that is run and emptied every turn, and kept: its array keeps the room
 * it grew to. (A fresh array each turn, grown push by push, was a third of the store's
 * garbage at pipeline depth 1: a young-generation collection every ~125 ms.)
 */
class WorkList {
  readonly #items: (TurnWork | undefined)[] = [];
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(work: TurnWork): void {
    this.#items[this.#length++] = work;
  }

  /** The item at `i` (< length). */
  at(i: number): TurnWork {
    return this.#items[i]!;
  }

  /** Empties the list, keeping its room; no closed connection stays reachable from it. */
  clear(): void {
    this.#items.fill(undefined, 0, this.#length);
    this.#length = 0;
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
  // Each list has a spare: the one being run is swapped out first, so that work added
  // while it runs (a connection asking for a later turn) goes to the next turn's.
  #ending = new WorkList();
  #endingSpare = new WorkList();
  #resuming = new WorkList();
  #resumingSpare = new WorkList();
  #holding = new WorkList();
  #holdingSpare = new WorkList();
  readonly #heldReads: HeldReadsHooks;
  readonly #turnEnd = new TurnEnd(() => this.#run());

  constructor(heldReads: HeldReadsHooks) {
    this.#heldReads = heldReads;
  }

  #run(): void {
    if (this.#resuming.length > 0) {
      const resuming = this.#resuming;
      this.#resuming = this.#resumingSpare;
      this.#resumingSpare = resuming;
      try {
        for (let i = 0; i < resuming.length; i++) {
          const w = resuming.at(i);
          w.turnQueues &= ~RESUMING;
          w.resumeTurn(); // it joins #ending
        }
      } finally {
        resuming.clear(); // (after a throw too: the list is swapped back in later, and must start empty)
      }
    }
    if (this.#holding.length > 0) {
      const holding = this.#holding;
      this.#holding = this.#holdingSpare;
      this.#holdingSpare = holding;
      const now = this.#heldReads.before();
      try {
        for (let i = 0; i < holding.length; i++) {
          const w = holding.at(i);
          w.turnQueues &= ~HOLDING;
          w.runHeldRead(now); // it joins #ending
        }
      } finally {
        holding.clear();
      }
      this.#heldReads.after();
    }
    const ending = this.#ending;
    this.#ending = this.#endingSpare;
    this.#endingSpare = ending;
    try {
      for (let i = 0; i < ending.length; i++) {
        const w = ending.at(i);
        w.turnQueues &= ~ENDING;
        w.endTurn(); // may ask for a later turn: served at the next turn end
      }
    } finally {
      ending.clear();
    }
  }

  atEndOfTurn(work: TurnWork): void {
    if ((work.turnQueues & ENDING) === 0) {
      work.turnQueues |= ENDING;
      this.#ending.push(work);
    }
    this.#turnEnd.request();
  }

  /** At the end of this turn, with the other held reads (before any connection's replies are written). */
  runHeldAtEndOfTurn(work: TurnWork): void {
    if ((work.turnQueues & HOLDING) === 0) {
      work.turnQueues |= HOLDING;
      this.#holding.push(work);
    }
    this.#turnEnd.request();
  }

  inLaterTurn(work: TurnWork): void {
    if ((work.turnQueues & RESUMING) === 0) {
      work.turnQueues |= RESUMING;
      this.#resuming.push(work);
    }
    this.#turnEnd.request();
  }
}
