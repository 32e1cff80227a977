import type { Socket } from 'node:net';

/**
 * Replies are built as bytes, not strings: one connection's replies of a turn go into one
 * byte buffer that is handed to the socket with a single write. A GET's value is encoded
 * to base64 straight into it. Nothing per reply outlives the turn on the JavaScript heap
 * (the old way, a string concatenated per reply and held until the write, left the
 * collector megabytes of reply strings per busy connection).
 *
 * Buffers come from a small shared pool and go back to it when the kernel took the whole
 * write at once (the common case); when it did not, the socket keeps the bytes until they
 * are sent and the connection takes a fresh buffer next time.
 */

/** Size of a pooled buffer: many turns' replies at low pipeline depth, a few dozen KB values. */
const POOLED_BYTES = 32 * 1024;
/** Free buffers kept; a turn needs one per connection that has replies at the same moment of writing, and they come back at once. */
const POOL_SIZE = 64;

export class ReplyBufferPool {
  readonly #free: Buffer[] = [];

  take(minBytes: number): Buffer {
    if (minBytes <= POOLED_BYTES) return this.#free.pop() ?? Buffer.allocUnsafeSlow(POOLED_BYTES);
    return Buffer.allocUnsafeSlow(minBytes);
  }

  give(buf: Buffer): void {
    if (buf.length === POOLED_BYTES && this.#free.length < POOL_SIZE) this.#free.push(buf);
  }
}

const EMPTY = Buffer.alloc(0);
const VALUE_PREFIX = 'VALUE ';
const LF = 0x0a;

/** One connection's replies not yet handed to its socket. */
export class ReplyBuffer {
  readonly #pool: ReplyBufferPool;
  #buf: Buffer = EMPTY;
  #len = 0;

  constructor(pool: ReplyBufferPool) {
    this.#pool = pool;
  }

  /** Bytes built and not yet written. */
  get length(): number {
    return this.#len;
  }

  /** Appends a reply made of ASCII characters (LF included by the caller). */
  ascii(text: string): void {
    this.#room(text.length);
    this.#len += this.#buf.write(text, this.#len, 'latin1');
  }

  /** Appends `VALUE <base64 of page[start, end)>\n`. */
  value(page: Buffer, start: number, end: number): void {
    const encoded = 4 * Math.ceil((end - start) / 3);
    this.#room(VALUE_PREFIX.length + encoded + 1);
    const buf = this.#buf;
    let at = this.#len + buf.write(VALUE_PREFIX, this.#len, 'latin1');
    if (encoded > 0) at += buf.write(page.toString('base64', start, end), at, 'latin1');
    buf[at++] = LF;
    this.#len = at;
  }

  /** Hands what was built to the socket in one write; returns the byte count. */
  writeTo(socket: Socket): number {
    const n = this.#len;
    if (n === 0) return 0;
    const buf = this.#buf;
    this.#buf = EMPTY;
    this.#len = 0;
    socket.write(buf.subarray(0, n));
    // Nothing left queued: the kernel copied the bytes and the buffer is free again.
    if (socket.writableLength === 0) this.#pool.give(buf);
    return n;
  }

  /** Drops what was built (the socket is gone). */
  discard(): void {
    if (this.#buf !== EMPTY) this.#pool.give(this.#buf);
    this.#buf = EMPTY;
    this.#len = 0;
  }

  #room(bytes: number): void {
    const need = this.#len + bytes;
    if (need <= this.#buf.length) return;
    const old = this.#buf;
    const buf = this.#len === 0 ? this.#pool.take(need) : Buffer.allocUnsafeSlow(Math.max(need, old.length * 2));
    if (this.#len > 0) {
      old.copy(buf, 0, 0, this.#len);
      this.#pool.give(old);
    } else if (old !== EMPTY) {
      this.#pool.give(old);
    }
    this.#buf = buf;
  }
}
