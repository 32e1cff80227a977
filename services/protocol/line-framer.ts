/**
 * Splits a byte stream into LF-terminated lines without ever seeing a socket.
 *
 * Lines are handed out as (buffer, start, end) views so the hot path copies nothing;
 * a CR right before the LF is dropped. A line may span chunks: its pieces are held
 * until the LF arrives, and never more than `maxLineBytes` of them (the bytes before
 * the LF, CR included). Past that the framer reports an overflow once and then
 * ignores everything: the rest of the stream cannot be framed.
 */
export interface LineSink {
  onLine(buf: Buffer, start: number, end: number): void;
  onOverflow(): void;
}

const LF = 0x0a;
const CR = 0x0d;

export class LineFramer {
  readonly maxLineBytes: number;
  readonly #sink: LineSink;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #overflowed = false;

  constructor(maxLineBytes: number, sink: LineSink) {
    this.maxLineBytes = maxLineBytes;
    this.#sink = sink;
  }

  /** Bytes held for an incomplete line. */
  get bufferedBytes(): number {
    return this.#pendingBytes;
  }

  get overflowed(): boolean {
    return this.#overflowed;
  }

  /**
   * Feeds a chunk, delivering every complete line in it. The sink may call `stop()`
   * from inside onLine (for QUIT), which ends delivery at once.
   */
  push(chunk: Buffer): void {
    if (this.#overflowed || this.#stopped) return;
    let pos = 0;
    const len = chunk.length;

    if (this.#pendingBytes > 0) {
      const lf = chunk.indexOf(LF);
      if (lf === -1) {
        this.#hold(chunk, 0);
        return;
      }
      if (this.#pendingBytes + lf > this.maxLineBytes) return this.#overflow();
      this.#pending.push(chunk.subarray(0, lf));
      const line = Buffer.concat(this.#pending, this.#pendingBytes + lf);
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#deliver(line, 0, line.length);
      pos = lf + 1;
    }

    while (pos < len && !this.#stopped) {
      const lf = chunk.indexOf(LF, pos);
      if (lf === -1) {
        this.#hold(chunk, pos);
        return;
      }
      if (lf - pos > this.maxLineBytes) return this.#overflow();
      this.#deliver(chunk, pos, lf);
      pos = lf + 1;
    }
  }

  #stopped = false;

  /** Stops delivering lines (the rest of the stream is dropped), e.g. after QUIT. */
  stop(): void {
    this.#stopped = true;
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  #deliver(buf: Buffer, start: number, end: number): void {
    if (end > start && buf[end - 1] === CR) end--;
    this.#sink.onLine(buf, start, end);
  }

  #hold(chunk: Buffer, from: number): void {
    const rest = chunk.length - from;
    if (this.#pendingBytes + rest > this.maxLineBytes) return this.#overflow();
    // Copy the tail so a partial line never pins the whole socket chunk.
    this.#pending.push(Buffer.from(chunk.subarray(from)));
    this.#pendingBytes += rest;
  }

  #overflow(): void {
    this.#overflowed = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#sink.onOverflow();
  }
}
