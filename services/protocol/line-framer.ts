import { viewOf } from '../shared/byte-views.ts';
import { freeNow } from '../shared/free-now.ts';

/**
 * Splits a byte stream into LF-terminated lines without ever seeing a socket.
 *
 * Lines are handed out as (buffer, start, end) views so the hot path copies nothing;
 * a CR right before the LF is dropped. A line may span chunks: its pieces are held
 * until the LF arrives, and never more than `maxLineBytes` of them (the bytes before
 * the LF, CR included). Past that the framer reports an overflow once and then
 * ignores everything: the rest of the stream cannot be framed.
 *
 * Two ways to feed it: push() delivers every complete line at once; append() only holds
 * the chunk, and deliver(n) hands out at most n lines, so a consumer can stop part-way
 * (its budget for this turn is spent, or its output is full) and pick up later where it
 * left off, with the unread chunks still held here in order.
 */
export interface LineSink {
  /** Returning false stops delivery after this line; the rest stays held for the next deliver(). */
  onLine(buf: Buffer, start: number, end: number): unknown;
  onOverflow(): void;
}

const LF = 0x0a;
const CR = 0x0d;
/** LF in each byte of a 32-bit word. */
const LF_WORD = 0x0a0a0a0a;

/**
 * Up to this many bytes are searched for an LF in JavaScript before buf.indexOf takes
 * over. Most command lines are shorter, and indexOf is a call into C++ (argument checks,
 * a handle scope, memchr) that costs more than the loop for such a line. A long value
 * still gets memchr. See docs/benchmarks.md#throughput-against-redis.
 */
const INLINE_SCAN_BYTES = 128;

/**
 * The first LF in buf[from, end), or -1. The loop reads four bytes a step through a view
 * of the buffer and looks at single bytes only in the word that holds an LF: a line of
 * 122 bytes costs 31 loads instead of 122.
 */
export function indexOfLf(buf: Uint8Array, from: number, end: number): number {
  const stop = Math.min(end, from + INLINE_SCAN_BYTES);
  const view = viewOf(buf);
  let i = from;
  for (const words = stop - 3; i < words; i += 4) {
    // A zero byte of x is an LF of the word; (x - 0x01..) & ~x & 0x80.. is non-zero exactly when there is one.
    const x = view.getInt32(i, true) ^ LF_WORD;
    if (((x - 0x01010101) & ~x & 0x80808080) !== 0) break;
  }
  for (; i < stop; i++) if (view.getUint8(i) === LF) return i;
  if (stop >= end) return -1;
  const lf = buf.indexOf(LF, stop);
  return lf >= end ? -1 : lf;
}

/**
 * The LFs of the first lines of a range of bytes, found by a scan of it that came first
 * (the store's key scan for its prefetch: scanKeys), so that the framer need not search
 * for them again: at[k] is the LF that ends line k, the lines consecutive from the range's
 * start, `count` of them. It describes those bytes only while they stay as they were: a
 * framer uses it for the range it was appended with, and drops it when it moves past that
 * range or copies it (ownHeldInput).
 */
export class LineEnds {
  readonly at: Int32Array;
  count = 0;

  constructor(capacity: number) {
    this.at = new Int32Array(capacity);
  }
}

/**
 * Where a framer's copies of input come from, and go back to once framed: the held rest of
 * a read (ownHeldInput), and a line that spans reads once put together.
 */
export interface HeldCopies {
  /** A buffer of at least `bytes` bytes. */
  take(bytes: number): Buffer;
  /** A buffer take() gave, no longer used by the framer or its sink: it may be handed out again, or freed. */
  give(buf: Buffer): void;
}

/** The default: a fresh buffer each time, left to the collector (a sink may keep a line it was given). */
const FRESH_COPIES: HeldCopies = { take: (bytes) => Buffer.allocUnsafe(bytes), give: () => {} };

export class LineFramer {
  readonly maxLineBytes: number;
  readonly #sink: LineSink;
  readonly #copies: HeldCopies;
  /** The framer's own copy that the chunk being framed is (ownHeldInput), or null: the chunk is the caller's. */
  #copy: Buffer | null = null;
  /** A copy framed to its end, or dropped, during deliver(): its last line may still be in the sink's hands, so it goes back when deliver() returns. */
  #framedCopy: Buffer | null = null;
  #delivering = false;
  /** The chunk being framed, its bytes [#pos, #end); null when all input is framed. */
  #chunk: Buffer | null = null;
  #pos = 0;
  #end = 0;
  /** Chunks appended while #chunk was still held, in order (rare: reading pauses then). */
  #queued: Buffer[] = [];
  /**
   * Pieces of a line whose LF has not arrived: exact copies with memory of their own, freed
   * once the line is put together. Not from #copies: a pooled copy is a whole read's size,
   * and thousands of connections each holding a few bytes of a line would hold that much each.
   */
  readonly #pending: Buffer[] = [];
  #pendingBytes = 0;
  #overflowed = false;
  #stopped = false;
  /**
   * LFs of #chunk's lines already found (append's lineEnds), or null: at[#knownIndex] ends
   * the line at #pos, since the lines are framed in order from the range's start.
   */
  #known: LineEnds | null = null;
  #knownIndex = 0;

  /**
   * `copies`: where the framer's copies come from (default: a fresh buffer each, left to the
   * collector). The sink must be done with a line when onLine returns if `copies` reuses or
   * frees what it is given back.
   */
  constructor(maxLineBytes: number, sink: LineSink, copies: HeldCopies = FRESH_COPIES) {
    this.maxLineBytes = maxLineBytes;
    this.#sink = sink;
    this.#copies = copies;
  }

  /** Bytes held for an incomplete line. */
  get bufferedBytes(): number {
    return this.#pendingBytes;
  }

  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** Appended input not framed yet (it may hold complete lines, or only part of one). */
  get hasUnframedInput(): boolean {
    return this.#chunk !== null;
  }

  /** The chunk being framed (null when all input is framed): its bytes [heldStart, heldEnd) are not delivered yet (the first may end a line begun in an earlier chunk). */
  get heldChunk(): Buffer | null {
    return this.#chunk;
  }

  get heldStart(): number {
    return this.#pos;
  }

  get heldEnd(): number {
    return this.#end;
  }

  /**
   * `lineEnds`: the LFs of the held chunk's next lines, from heldStart on (scanKeys from
   * there), for the deliveries until forgetLineEnds(), as append's are for a new chunk.
   */
  useLineEnds(lineEnds: LineEnds): void {
    if (this.#chunk === null) return;
    this.#known = lineEnds;
    this.#knownIndex = 0;
  }

  /** The LineEnds given are about to change: deliver() finds the LFs itself from here. */
  forgetLineEnds(): void {
    this.#known = null;
  }

  /**
   * Feeds a chunk, delivering every complete line in it. The sink may call `stop()`
   * from inside onLine (for QUIT), which ends delivery at once.
   */
  push(chunk: Buffer): void {
    this.append(chunk);
    this.deliver(Infinity);
  }

  /**
   * Holds chunk[start, end) for deliver(). A range rather than a view (subarray) of it:
   * the store appends every read of one command this way, and a view per read would be
   * half of its garbage at pipeline depth 1. `lineEnds`, when given, are the LFs of the range's
   * first lines (see LineEnds); they are used only while deliver() frames this range from
   * its start on, and are read from as deliver() goes, so they must not change before the
   * range is framed or ownHeldInput() is called.
   */
  append(chunk: Buffer, start = 0, end = chunk.length, lineEnds?: LineEnds): void {
    if (this.#overflowed || this.#stopped || end <= start) return;
    if (this.#chunk === null) {
      this.#chunk = chunk;
      this.#pos = start;
      this.#end = end;
      this.#known = lineEnds ?? null;
      this.#knownIndex = 0;
    } else {
      this.#queued.push(start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end));
    }
  }

  /**
   * Delivers up to `maxLines` complete lines from the held chunks, stopping early when
   * the sink returns false or calls stop(). Returns how many it delivered.
   */
  deliver(maxLines: number): number {
    let delivered = 0;
    this.#delivering = true;
    while (delivered < maxLines && this.#chunk !== null && !this.#stopped && !this.#overflowed) {
      const chunk = this.#chunk;
      const pos = this.#pos;
      const end = this.#end;
      // (Past `end` the buffer may hold other bytes, and an LF there is not this chunk's.)
      const known = this.#known;
      const lf = known !== null && this.#knownIndex < known.count ? known.at[this.#knownIndex++]! : indexOfLf(chunk, pos, end);
      if (lf === -1) {
        this.#hold(chunk, pos, end); // before the chunk (a copy of the framer's) is given back
        this.#nextChunk();
        continue;
      }
      let more: unknown;
      if (this.#pendingBytes > 0) {
        if (this.#pendingBytes + lf - pos > this.maxLineBytes) {
          this.#overflow();
          break;
        }
        const length = this.#pendingBytes + lf - pos;
        const line = this.#joinPending(chunk, pos, lf);
        this.#advance(lf + 1);
        more = this.#deliver(line, 0, length);
        this.#copies.give(line);
      } else {
        if (lf - pos > this.maxLineBytes) {
          this.#overflow();
          break;
        }
        this.#advance(lf + 1);
        more = this.#deliver(chunk, pos, lf);
      }
      delivered++;
      if (more === false) break;
    }
    this.#delivering = false;
    if (this.#framedCopy !== null) this.#giveBack();
    return delivered;
  }

  /**
   * Copies the input still held, so the caller may reuse the buffers it appended (a
   * socket reading into one shared buffer). Costs nothing when everything was framed, or
   * when what is held is already the framer's copy.
   */
  ownHeldInput(): void {
    this.#known = null;
    const chunk = this.#chunk;
    if (chunk === null) return;
    if (chunk !== this.#copy) {
      const n = this.#end - this.#pos;
      const copy = this.#copies.take(n);
      chunk.copy(copy, 0, this.#pos, this.#end);
      this.#copy = copy;
      this.#chunk = copy;
      this.#pos = 0;
      this.#end = n;
    }
    for (let i = 0; i < this.#queued.length; i++) this.#queued[i] = Buffer.from(this.#queued[i]!);
  }

  /**
   * Drops whatever it holds and frames a new stream from the start: a framer reused for
   * another connection (never from inside deliver()).
   */
  reset(): void {
    this.#dropInput();
    this.#giveBack();
    this.#stopped = false;
    this.#overflowed = false;
    this.#known = null;
    this.#knownIndex = 0;
  }

  /** Stops delivering lines (the rest of the stream is dropped), e.g. after QUIT. */
  stop(): void {
    this.#stopped = true;
    this.#dropInput();
  }

  /** Drops every byte it holds (allocating nothing when it holds none: a reused framer's common case). */
  #dropInput(): void {
    this.#retireCopy();
    this.#chunk = null;
    if (this.#queued.length > 0) this.#queued = [];
    this.#dropPending();
  }

  #advance(to: number): void {
    if (to < this.#end) this.#pos = to;
    else this.#nextChunk();
  }

  #nextChunk(): void {
    this.#known = null;
    this.#retireCopy();
    const next = this.#queued.length > 0 ? this.#queued.shift()! : null;
    this.#chunk = next;
    this.#pos = 0;
    this.#end = next === null ? 0 : next.length;
  }

  #deliver(buf: Buffer, start: number, end: number): unknown {
    if (end > start && buf[end - 1] === CR) end--;
    return this.#sink.onLine(buf, start, end);
  }

  #hold(chunk: Buffer, from: number, end: number): void {
    const rest = end - from;
    if (this.#pendingBytes + rest > this.maxLineBytes) return this.#overflow();
    // Copy the tail so a partial line never pins the whole socket chunk.
    const piece = Buffer.allocUnsafeSlow(rest);
    chunk.copy(piece, 0, from, end);
    this.#pending.push(piece);
    this.#pendingBytes += rest;
  }

  /** The held pieces and chunk[from, to), as one line (a copy from #copies, the line at its start); the pieces are freed. */
  #joinPending(chunk: Buffer, from: number, to: number): Buffer {
    const line = this.#copies.take(this.#pendingBytes + to - from);
    let at = 0;
    for (let i = 0; i < this.#pending.length; i++) at += this.#pending[i]!.copy(line, at);
    chunk.copy(line, at, from, to);
    this.#dropPending();
    return line;
  }

  /** Frees the pieces of an incomplete line (they are the framer's alone). */
  #dropPending(): void {
    const pending = this.#pending;
    for (let i = 0; i < pending.length; i++) freeNow(pending[i]!);
    this.#pending.length = 0;
    this.#pendingBytes = 0;
  }

  /** The chunk is framed or dropped: the framer's copy of it goes back where it came from (once deliver() returns, if it runs). */
  #retireCopy(): void {
    if (this.#copy !== null) {
      this.#framedCopy = this.#copy;
      this.#copy = null;
    }
    if (!this.#delivering) this.#giveBack();
  }

  #giveBack(): void {
    const copy = this.#framedCopy;
    this.#framedCopy = null;
    if (copy !== null) this.#copies.give(copy);
  }

  #overflow(): void {
    this.#overflowed = true;
    this.#dropInput();
    this.#sink.onOverflow();
  }
}
