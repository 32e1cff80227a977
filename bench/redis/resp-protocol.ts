// RESP, the protocol Redis speaks, for the comparison with Redis: `kv bench`'s load
// generator driven with RESP arrays and counting RESP2 replies, plugged in through its
// BenchProtocol (services/cli/bench/bench-protocol.ts). It lives with the bench, not in
// the shipped `kv`.
import type { BenchProtocol } from '../../services/cli/bench/bench-protocol.ts';
import { benchValue, KEY_DIGITS, TemplateEncoder, type CommandEncoder } from '../../services/cli/bench/command-encoder.ts';
import { EXPECT_GET, EXPECT_SET, type ReplyScanner } from '../../services/cli/bench/reply-scanner.ts';

/** GET and SET as RESP arrays of bulk strings, the form redis-benchmark and client libraries send. */
export function createRespEncoder(valueSize: number): CommandEncoder {
  const digits = '#'.repeat(KEY_DIGITS);
  const key = `key:${digits}`;
  const value = benchValue(valueSize);
  const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  return new TemplateEncoder(
    Buffer.from(`*2\r\n${bulk('GET')}${bulk(key)}`),
    Buffer.concat([Buffer.from(`*3\r\n${bulk('SET')}${bulk(key)}$${value.length}\r\n`), value, Buffer.from('\r\n')]),
    digits,
  );
}

const LF = 0x0a;

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

export const benchProtocol: BenchProtocol = {
  name: 'resp',
  module: import.meta.url,
  createEncoder: createRespEncoder,
  createScanner: (valueSize) => new RespReplyScanner(valueSize),
};

export { benchProtocol as respProtocol };
