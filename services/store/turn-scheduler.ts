import { TurnEnd } from '../shared/turn-batcher.ts';

/** What a connection does at the turns of the event loop. */
export interface TurnWork {
  /** Owned by the TurnScheduler: which of its lists the work is in (so each holds it once). */
  turnQueues: number;
  /** At the end of the turn it had work in: write the replies built during it. */
  endTurn(): void;
  /** In a later turn: run the lines the per-turn budget held back. */
  resumeTurn(): void;
}

const ENDING = 1;
const RESUMING = 2;

/**
 * Gives connections two hooks on the event loop: the end of the current turn (TurnEnd:
 * setImmediate runs after the poll phase has read every ready socket, so replies go out
 * together, as Redis writes in beforeSleep, and a client with many connections is woken
 * once, not per reply) and a later turn, for a connection that used up its budget: it
 * continues only after the next poll phase has served everyone else.
 *
 * It keeps its own two lists rather than two TurnBatchers: one turn end serves both,
 * resumed work first, so its replies join those of the connections read in the same
 * turn. With a batcher each, two setImmediates could fall in one check phase in either
 * order, and a connection that ended its turn in the first could resume in the second,
 * before the next poll phase has served the others.
 */
export class TurnScheduler {
  #ending: TurnWork[] = [];
  #resuming: TurnWork[] = [];
  readonly #turnEnd = new TurnEnd(() => this.#run());

  #run(): void {
    if (this.#resuming.length > 0) {
      const resuming = this.#resuming;
      this.#resuming = [];
      for (const w of resuming) {
        w.turnQueues &= ~RESUMING;
        w.resumeTurn(); // it joins #ending
      }
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

  inLaterTurn(work: TurnWork): void {
    if ((work.turnQueues & RESUMING) === 0) {
      work.turnQueues |= RESUMING;
      this.#resuming.push(work);
    }
    this.#turnEnd.request();
  }
}
