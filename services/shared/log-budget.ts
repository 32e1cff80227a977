/**
 * A bound on one kind of log line that a client can cause at will (one per connection it
 * opens): at most `lines` per `windowMs`; the rest are dropped and counted, and the first
 * line of a later window says how many were (`suppressed`). The event is still counted in
 * its metric every time: the log shows examples, the metric the rate.
 */
export class LogBudget {
  readonly #lines: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  #windowStart = -Infinity;
  #used = 0;
  #suppressed = 0;

  constructor(lines: number, windowMs: number, now: () => number = () => performance.now()) {
    this.#lines = lines;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /**
   * Whether this line may be written; when it may, `suppressed` is how many were dropped
   * since the last one written (to log with it), else undefined.
   */
  take(): { readonly suppressed: number } | undefined {
    const now = this.#now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now;
      this.#used = 0;
    }
    if (this.#used >= this.#lines) {
      this.#suppressed++;
      return undefined;
    }
    this.#used++;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    return { suppressed };
  }
}
