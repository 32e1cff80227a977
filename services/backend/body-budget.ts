/**
 * The request-body bytes the backend may hold at once, across all connections. A body
 * takes its declared Content-Length when its reading starts (a chunked one, each chunk
 * as it arrives) and gives it back once read, refused or abandoned; a body that does not
 * fit is refused at once (503) instead of being buffered.
 */
export class BodyBudget {
  readonly limit: number;
  #used = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Bytes held right now by bodies being read. */
  get used(): number {
    return this.#used;
  }

  /** Takes n bytes if they fit, and says whether they did. */
  take(n: number): boolean {
    if (this.#used + n > this.limit) return false;
    this.#used += n;
    return true;
  }

  give(n: number): void {
    this.#used -= n;
  }
}
