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
  #ending: TurnWork[] = [];
  #resuming: TurnWork[] = [];
  #holding: TurnWork[] = [];
  readonly #heldReads: HeldReadsHooks;
  readonly #turnEnd = new TurnEnd(() => this.#run());

  constructor(heldReads: HeldReadsHooks) {
    this.#heldReads = heldReads;
  }

  #run(): void {
    if (this.#resuming.length > 0) {
      const resuming = this.#resuming;
      this.#resuming = [];
      for (const w of resuming) {
        w.turnQueues &= ~RESUMING;
        w.resumeTurn(); // it joins #ending
      }
    }
    if (this.#holding.length > 0) {
      const holding = this.#holding;
      this.#holding = [];
      const now = this.#heldReads.before();
      for (const w of holding) {
        w.turnQueues &= ~HOLDING;
        w.runHeldRead(now); // it joins #ending
      }
      this.#heldReads.after();
    }
    const ending = this.#ending;
    this.#ending = [];
    for (const w of ending) {
      w.turnQueues &= ~ENDING;
      w.endTurn(); // may ask for a later turn: served at the next turn end
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
