/**
 * Calls `run` once at the end of the current turn of the event loop, however often it is
 * requested during the turn.
 *
 * The end of a turn is setImmediate's check phase, which follows the poll phase: by then
 * the callbacks of every socket that was ready in that poll have run, so one call serves
 * all of them (the replies to every client read in the turn, the commands of every HTTP
 * request parsed in it, the lines they logged). queueMicrotask and process.nextTick would
 * run after each single callback, that is once per socket read, and batch nothing across
 * sockets.
 *
 * The request is forgotten before `run` starts: one made while it runs (or later in the
 * same check phase) is served at the end of the next turn, after the next poll phase.
 */
export class TurnEnd {
  readonly #run: () => void;
  #requested = false;

  constructor(run: () => void) {
    this.#run = run;
  }

  request(): void {
    if (this.#requested) return;
    this.#requested = true;
    setImmediate(this.#atTurnEnd);
  }

  readonly #atTurnEnd = (): void => {
    this.#requested = false;
    this.#run();
  };
}

/**
 * Items collected during one turn of the event loop and handed over together, in the order
 * they were added, at its end (see TurnEnd for when that is). Items added while they are
 * handed over wait for the end of the next turn.
 */
export class TurnBatcher<T> {
  readonly #handOver: (items: T[]) => void;
  readonly #turnEnd = new TurnEnd(() => this.flush());
  #items: T[] = [];

  /** `handOver` receives each batch (never empty) and may keep the array. */
  constructor(handOver: (items: T[]) => void) {
    this.#handOver = handOver;
  }

  /** Items waiting for the end of the turn. */
  get size(): number {
    return this.#items.length;
  }

  add(item: T): void {
    this.#items.push(item);
    this.#turnEnd.request();
  }

  /** Hands over what waits now; items added later in this turn still go at its end. */
  flush(): void {
    const items = this.#items;
    if (items.length === 0) return;
    this.#items = [];
    this.#handOver(items);
  }

  /** Drops what waits. */
  discard(): void {
    this.#items = [];
  }
}
