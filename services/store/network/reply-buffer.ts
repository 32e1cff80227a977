import { ReplyTarget, valueReplyLength, writeValueReply } from '../../protocol/replies.ts';
import { latin1Write } from '../../shared/node-internals.ts';
import { freeNow } from '../../shared/free-now.ts';
import type { ClientSocket } from './client-socket.ts';

/**
 * Replies are built as bytes, not strings: one connection's replies of a turn go into one
 * byte buffer that is handed to the socket with a single write. A GET's value is encoded
 * to base64 straight into it. Nothing per reply outlives the turn on the JavaScript heap
 * (the old way, a string concatenated per reply and held until the write, left the
 * collector megabytes of reply strings per busy connection).
 *
 * Buffers come from a small shared pool and go back to it as soon as the socket no longer
 * needs them: at once when the kernel took the whole write (the common case), otherwise
 * at the connection's next write that finds the socket's queue empty. A client that reads
 * slowly therefore reuses the same two buffers instead of costing an allocation (and the
 * collector's work) per turn. A buffer too large for the pool, or one past its size, is
 * freed when the socket no longer needs it (free-now.ts). The pool holds them as ReplyTargets (services/protocol/
 * replies.ts), each with its DataView, so a buffer taken from it costs no new object.
 */

/** Size of a pooled buffer: a connection's reply bound (64 KiB) plus a reply of a few KB. */
const POOLED_BYTES = 80 * 1024;
/** Free buffers kept. */
const POOL_SIZE = 64;

export class ReplyBufferPool {
  readonly #free: ReplyTarget[] = [];

  take(minBytes: number): ReplyTarget {
    if (minBytes <= POOLED_BYTES) return this.#free.pop() ?? new ReplyTarget(Buffer.allocUnsafeSlow(POOLED_BYTES));
    return new ReplyTarget(Buffer.allocUnsafeSlow(minBytes));
  }

  give(target: ReplyTarget): void {
    if (target.bytes.length === POOLED_BYTES && this.#free.length < POOL_SIZE) this.#free.push(target);
    else freeNow(target.bytes); // a large reply's buffer: freed once written, not at a collection
  }

  /** Buffers kept for reuse. */
  get freeCount(): number {
    return this.#free.length;
  }

  /** Frees the buffers kept (a store standing idle): up to 5 MiB after many busy connections. */
  releaseFree(): void {
    for (let i = 0; i < this.#free.length; i++) freeNow(this.#free[i]!.bytes);
    this.#free.length = 0;
  }
}

const EMPTY = new ReplyTarget(Buffer.alloc(0));

/** One connection's replies not yet handed to its socket. */
export class ReplyBuffer {
  readonly #pool: ReplyBufferPool;
  #target: ReplyTarget = EMPTY;
  #len = 0;
  /** The buffer of the last write that the socket had not finished when it returned. */
  #inFlight: ReplyTarget | null = null;
  /** Bytes handed over so far: taken by the kernel at once, or queued in the socket. */
  #handed = 0;

  constructor(pool: ReplyBufferPool) {
    this.#pool = pool;
  }

  /** Bytes built and not yet written. */
  get length(): number {
    return this.#len;
  }

  /** Bytes handed to the socket so far (socket.bytesWritten counts only those it queued itself). */
  get handedBytes(): number {
    return this.#handed;
  }

  /** Appends a reply made of ASCII characters (LF included by the caller). */
  ascii(text: string): void {
    this.#room(text.length);
    this.#len += latin1Write(this.#target.bytes, text, this.#len);
  }

  /** Appends a reply given as bytes (the constant ones: OK, PONG, NOT_FOUND...). */
  bytes(reply: Buffer): void {
    const n = reply.length;
    this.#room(n);
    const buf = this.#target.bytes;
    let at = this.#len;
    for (let i = 0; i < n; i++) buf[at++] = reply[i]!;
    this.#len = at;
  }

  /** Appends the GET reply for the value page[start, end) (the protocol's writeValueReply). */
  value(page: DataView, start: number, end: number): void {
    this.#room(valueReplyLength(end - start));
    this.#len = writeValueReply(this.#target, this.#len, page, start, end);
  }

  /**
   * Hands what was built to the socket in one write, straight to the kernel when nothing
   * is queued before it (what it does not take is queued behind, in order); returns the
   * byte count.
   */
  writeTo(socket: ClientSocket): number {
    const n = this.#len;
    if (n === 0) return 0;
    const target = this.#target;
    const buf = target.bytes;
    this.#target = EMPTY;
    this.#len = 0;
    this.#handed += n;
    let taken = -1;
    if (socket.writableLength === 0) {
      // An empty queue means every earlier write is done with its bytes.
      if (this.#inFlight !== null) {
        this.#pool.give(this.#inFlight);
        this.#inFlight = null;
      }
      taken = socket.writeNow(buf, n);
      if (taken === n) {
        this.#pool.give(target);
        return n;
      }
    }
    socket.queue(buf, Math.max(taken, 0), n); // taken is -1 when nothing was written directly
    if (socket.writableLength === 0) this.#pool.give(target); // the kernel copied it all
    else this.#inFlight = target; // an older one still in flight is left to the collector
    return n;
  }

  /** Empty, as new, for another connection; what it held goes back to the pool (its socket dropped its queue). */
  reset(): void {
    if (this.#inFlight !== null) this.#pool.give(this.#inFlight);
    this.discard();
    this.#handed = 0;
  }

  /** Drops what was built (the socket is gone). */
  discard(): void {
    if (this.#target !== EMPTY) this.#pool.give(this.#target);
    this.#target = EMPTY;
    this.#len = 0;
    this.#inFlight = null;
  }

  #room(bytes: number): void {
    const need = this.#len + bytes;
    const old = this.#target;
    if (need <= old.bytes.length) return;
    const grown = this.#len === 0 ? this.#pool.take(need) : new ReplyTarget(Buffer.allocUnsafeSlow(Math.max(need, old.bytes.length * 2)));
    if (this.#len > 0) old.bytes.copy(grown.bytes, 0, 0, this.#len);
    if (old !== EMPTY) this.#pool.give(old);
    this.#target = grown;
  }
}
