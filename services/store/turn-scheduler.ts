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
 * Gives connections two hooks on the event loop: the end of the current turn (setImmediate
 * runs after the poll phase has read every ready socket, so replies go out together, as
 * Redis writes in beforeSleep, and a client with many connections is woken once, not per
 * reply) and a later turn, for a connection that used up its budget: it continues only
 * after the next poll phase has served everyone else.
 */
export class TurnScheduler {
  #ending: TurnWork[] = [];
  #resuming: TurnWork[] = [];
  #scheduled = false;

  readonly #run = (): void => {
    this.#scheduled = false;
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
      w.endTurn(); // may ask for a later turn: scheduled anew
    }
  };

  atEndOfTurn(work: TurnWork): void {
    if ((work.turnQueues & ENDING) === 0) {
      work.turnQueues |= ENDING;
      this.#ending.push(work);
    }
    this.#schedule();
  }

  inLaterTurn(work: TurnWork): void {
    if ((work.turnQueues & RESUMING) === 0) {
      work.turnQueues |= RESUMING;
      this.#resuming.push(work);
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // Called from the check phase (a turn's end) this runs in the next loop iteration,
    // after its poll phase.
    setImmediate(this.#run);
  }
}
