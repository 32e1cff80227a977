// Byte-level reply counters for the load generator: no strings, no promises, no
// per-reply allocation. Each scanner knows what the next replies should be (GET or
// SET, in order) and sorts every complete reply into ok / miss / error / wrong.

export const EXPECT_GET = 0;
export const EXPECT_SET = 1;

export interface ReplyScanner {
  /** What each reply of the current batch answers, in order (EXPECT_GET / EXPECT_SET). */
  expect: Uint8Array;
  /** Index in `expect` of the next reply. */
  index: number;
  /** GET of an absent key (NOT_FOUND in the line protocol). */
  misses: number;
  /** Error replies (`ERROR ...` in the line protocol). */
  errors: number;
  /** Replies of the wrong shape or size. */
  wrong: number;
  /** Set when the stream cannot be followed any more (a reply type the scanner does not know). */
  broken: boolean;
  /** Feeds a chunk; returns how many replies it completed. */
  feed(chunk: Buffer): number;
}

const LF = 0x0a;
const CR = 0x0d;
const EQUALS = 0x3d;

/**
 * kvstack line protocol: one line per reply. A GET hit must be `VALUE ` plus exactly the
 * base64 length of the value size; a SET must be `OK`.
 *
 * It does not use the protocol's decoder (services/protocol/replies.ts decodeReply) on
 * purpose: that one makes a string of every line and decodes the base64, and the load
 * generator must count hundreds of thousands of replies a second without becoming what
 * it measures. The first byte, the length and the base64 padding (the length alone
 * cannot tell 1, 2 or 3 bytes apart) are enough to sort replies to GET and SET;
 * test/protocol-replies.test.ts checks it agrees with the decoder on every reply the
 * store's encoders write.
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
  /** `=` at the end of the base64 of a value of the expected size: 0, 2 or 1. */
  readonly #padding: number;
  /** Bytes of the current line seen so far, or -1 at a line start. */
  #partial = -1;
  #first = 0;
  /** The last three bytes of the current line held from earlier chunks (#tail3 the newest). */
  #tail1 = 0;
  #tail2 = 0;
  #tail3 = 0;
  /** The last three bytes before the LF of the line just ended (#end3 the last). */
  #end1 = 0;
  #end2 = 0;
  #end3 = 0;

  constructor(valueSize: number) {
    this.#hitLength = 6 + 4 * Math.ceil(valueSize / 3);
    this.#emptyValue = valueSize === 0;
    this.#padding = [0, 2, 1][valueSize % 3]!;
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
        for (let i = Math.max(pos, len - 3); i < len; i++) this.#hold(chunk[i]!);
        this.#partial += len - pos;
        return done;
      }
      // The line's last three bytes: from this chunk, then from what earlier ones left.
      this.#end1 = lf - 3 >= pos ? chunk[lf - 3]! : lf - 2 >= pos ? this.#tail3 : lf - 1 >= pos ? this.#tail2 : this.#tail1;
      this.#end2 = lf - 2 >= pos ? chunk[lf - 2]! : lf - 1 >= pos ? this.#tail3 : this.#tail2;
      this.#end3 = lf - 1 >= pos ? chunk[lf - 1]! : this.#tail3;
      this.#classify(this.#partial + (lf - pos));
      this.#partial = -1;
      this.#tail1 = this.#tail2 = this.#tail3 = 0;
      pos = lf + 1;
      done++;
    }
    return done;
  }

  #hold(b: number): void {
    this.#tail1 = this.#tail2;
    this.#tail2 = this.#tail3;
    this.#tail3 = b;
  }

  /** `=` at the end of the line just ended, a CR before its LF aside. */
  #endPadding(): number {
    const cr = this.#end3 === CR;
    const last = cr ? this.#end2 : this.#end3;
    const before = cr ? this.#end1 : this.#end2;
    return last !== EQUALS ? 0 : before !== EQUALS ? 1 : 2;
  }

  #classify(n: number): void {
    const first = this.#first;
    // n counts the bytes before the LF; a CR before it is tolerated (+1).
    if (this.expect[this.index++] === EXPECT_GET) {
      if (first === 0x56 /* V */ && (this.#emptyValue && n === 5)) return;
      if (first === 0x56 /* V */ && (n === this.#hitLength || n === this.#hitLength + 1) && this.#endPadding() === this.#padding) return;
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
