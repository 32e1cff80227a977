// Byte-level reply counters for the load generator: no strings, no promises, no
// per-reply allocation. Each scanner knows what the next replies should be (GET or
// SET, in order) and sorts every complete reply into ok / miss / error / wrong.

import type { BenchProtocol } from './command-encoder.ts';

export const EXPECT_GET = 0;
export const EXPECT_SET = 1;

export interface ReplyScanner {
  /** What each reply of the current batch answers, in order (EXPECT_GET / EXPECT_SET). */
  expect: Uint8Array;
  /** Index in `expect` of the next reply. */
  index: number;
  /** GET of an absent key (NOT_FOUND, $-1). */
  misses: number;
  /** `ERROR ...` / `-ERR ...` replies. */
  errors: number;
  /** Replies of the wrong shape or size. */
  wrong: number;
  /** Set when the stream cannot be followed any more (a reply type the scanner does not know). */
  broken: boolean;
  /** Feeds a chunk; returns how many replies it completed. */
  feed(chunk: Buffer): number;
}

const LF = 0x0a;

/**
 * kvstack line protocol: one line per reply. A GET hit must be `VALUE ` plus exactly the
 * base64 length of the value size; a SET must be `OK`.
 */
export class LineReplyScanner implements ReplyScanner {
  expect = new Uint8Array(0);
  index = 0;
  misses = 0;
  errors = 0;
  wrong = 0;
  broken = false;
  readonly #hitLength: number;
  readonly #emptyValue: boolean;
  /** Bytes of the current line seen so far, or -1 at a line start. */
  #partial = -1;
  #first = 0;

  constructor(valueSize: number) {
    this.#hitLength = 6 + 4 * Math.ceil(valueSize / 3);
    this.#emptyValue = valueSize === 0;
  }

  feed(chunk: Buffer): number {
    const len = chunk.length;
    let pos = 0;
    let done = 0;
    while (pos < len) {
      if (this.#partial < 0) {
        this.#first = chunk[pos]!;
        this.#partial = 0;
      }
      const lf = chunk.indexOf(LF, pos);
      if (lf === -1) {
        this.#partial += len - pos;
        return done;
      }
      this.#classify(this.#partial + (lf - pos));
      this.#partial = -1;
      pos = lf + 1;
      done++;
    }
    return done;
  }

  #classify(n: number): void {
    const first = this.#first;
    // n counts the bytes before the LF; a CR before it is tolerated (+1).
    if (this.expect[this.index++] === EXPECT_GET) {
      if (first === 0x56 /* V */ && (n === this.#hitLength || n === this.#hitLength + 1 || (this.#emptyValue && n === 5))) return;
      if (first === 0x4e /* N */) this.misses++;
      else if (first === 0x45 /* E */) this.errors++;
      else this.wrong++;
    } else {
      if (first === 0x4f /* O */ && (n === 2 || n === 3)) return;
      if (first === 0x45) this.errors++;
      else this.wrong++;
    }
  }
}

const S_TYPE = 0;
const S_LINE = 1;
const S_BULK_LENGTH = 2;
const S_BULK_BODY = 3;

/**
 * RESP2 replies to GET and SET: `+OK`, `-ERR ...`, `$<n>\r\n<n bytes>\r\n`, `$-1`.
 * A GET hit must carry exactly the value size.
 */
export class RespReplyScanner implements ReplyScanner {
  expect = new Uint8Array(0);
  index = 0;
  misses = 0;
  errors = 0;
  wrong = 0;
  broken = false;
  readonly #valueSize: number;
  #state = S_TYPE;
  #type = 0;
  #number = 0;
  #negative = false;
  #remaining = 0;

  constructor(valueSize: number) {
    this.#valueSize = valueSize;
  }

  feed(chunk: Buffer): number {
    const len = chunk.length;
    let pos = 0;
    let done = 0;
    while (pos < len) {
      switch (this.#state) {
        case S_TYPE: {
          const t = chunk[pos++]!;
          this.#type = t;
          if (t === 0x24 /* $ */) {
            this.#state = S_BULK_LENGTH;
            this.#number = 0;
            this.#negative = false;
          } else if (t === 0x2b /* + */ || t === 0x2d /* - */ || t === 0x3a /* : */) {
            this.#state = S_LINE;
          } else {
            // Arrays, RESP3 types, garbage: the replies cannot be counted any more.
            this.broken = true;
            return done;
          }
          break;
        }
        case S_LINE: {
          const lf = chunk.indexOf(LF, pos);
          if (lf === -1) return done;
          pos = lf + 1;
          this.#state = S_TYPE;
          const expect = this.expect[this.index++];
          if (this.#type === 0x2d) this.errors++;
          else if (this.#type !== 0x2b || expect !== EXPECT_SET) this.wrong++;
          done++;
          break;
        }
        case S_BULK_LENGTH: {
          while (pos < len) {
            const b = chunk[pos++]!;
            if (b >= 0x30 && b <= 0x39) this.#number = this.#number * 10 + (b - 0x30);
            else if (b === 0x2d) this.#negative = true;
            else if (b === LF) {
              if (this.#negative) {
                this.#state = S_TYPE;
                if (this.expect[this.index++] === EXPECT_GET) this.misses++;
                else this.wrong++;
                done++;
              } else {
                this.#state = S_BULK_BODY;
                this.#remaining = this.#number + 2;
              }
              break;
            }
          }
          break;
        }
        default: {
          const take = Math.min(this.#remaining, len - pos);
          pos += take;
          this.#remaining -= take;
          if (this.#remaining === 0) {
            this.#state = S_TYPE;
            if (this.expect[this.index++] !== EXPECT_GET || this.#number !== this.#valueSize) this.wrong++;
            done++;
          }
        }
      }
    }
    return done;
  }
}

export function createScanner(protocol: BenchProtocol, valueSize: number): ReplyScanner {
  return protocol === 'line' ? new LineReplyScanner(valueSize) : new RespReplyScanner(valueSize);
}
