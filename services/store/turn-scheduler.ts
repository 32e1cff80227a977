/** What a connection does at the turns of the event loop. */
export interface TurnWork {
  /** At the end of the turn it had work in: write the replies built during it. */
  endTurn(): void;
  /** In a later turn: run the lines the per-turn budget held back. */
  resumeTurn(): void;
}

/**
 * Gives connections two hooks on the event loop: the end of the current turn (setImmediate
 * runs after the poll phase has read every ready socket, so replies go out together, as
 * Redis writes in beforeSleep, and a client with many connections is woken once, not per
 * reply) and a later turn, for a connection that used up its budget: it continues only
 * after the next poll phase has served everyone else.
 */
export class TurnScheduler {
  #ending = new Set<TurnWork>();
  #resuming = new Set<TurnWork>();
  #spare = new Set<TurnWork>();
  #scheduled = false;

  readonly #run = (): void => {
    this.#scheduled = false;
    if (this.#resuming.size > 0) {
      const resuming = this.#resuming;
      this.#resuming = this.#spare;
      for (const w of resuming) w.resumeTurn(); // they join #ending
      resuming.clear();
      this.#spare = resuming;
    }
    const ending = this.#ending;
    this.#ending = this.#spare;
    for (const w of ending) w.endTurn(); // may ask for a later turn: scheduled anew
    ending.clear();
    this.#spare = ending;
  };

  atEndOfTurn(work: TurnWork): void {
    this.#ending.add(work);
    this.#schedule();
  }

  inLaterTurn(work: TurnWork): void {
    this.#resuming.add(work);
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
