// Pre-encoded commands for the load generator. Keys are `key:` plus 12 zero-padded
// digits, as redis-benchmark's `key:__rand_int__`; every SET carries the same value.
// A command is its template copied into the batch buffer and 12 digits written over it.

export const KEY_DIGITS = 12;
export const MAX_KEYSPACE = 10 ** KEY_DIGITS;

export interface CommandEncoder {
  readonly getLength: number;
  readonly setLength: number;
  /** Writes GET of key number k at off; returns the offset after it. */
  writeGet(buf: Buffer, off: number, k: number): number;
  writeSet(buf: Buffer, off: number, k: number): number;
}

export function benchKey(k: number): string {
  return `key:${String(k).padStart(KEY_DIGITS, '0')}`;
}

/** The value every SET stores: printable bytes (no LF), so any protocol carries it as is. */
export function benchValue(size: number): Buffer {
  return Buffer.alloc(size, 'x');
}

function writeDigits(buf: Buffer, end: number, k: number): void {
  // Right to left; the template already holds the leading zeros' positions.
  for (let i = end - 1, n = k; i >= end - KEY_DIGITS; i--) {
    buf[i] = 48 + (n % 10);
    n = Math.floor(n / 10);
  }
}

/** Commands made from a GET and a SET template whose key digits are `placeholder`. */
export class TemplateEncoder implements CommandEncoder {
  readonly getLength: number;
  readonly setLength: number;
  readonly #get: Buffer;
  readonly #set: Buffer;
  readonly #getDigitsEnd: number;
  readonly #setDigitsEnd: number;

  constructor(get: Buffer, set: Buffer, placeholder: string) {
    this.#get = get;
    this.#set = set;
    this.getLength = get.length;
    this.setLength = set.length;
    this.#getDigitsEnd = get.indexOf(placeholder) + KEY_DIGITS;
    this.#setDigitsEnd = set.indexOf(placeholder) + KEY_DIGITS;
  }

  writeGet(buf: Buffer, off: number, k: number): number {
    buf.set(this.#get, off);
    writeDigits(buf, off + this.#getDigitsEnd, k);
    return off + this.getLength;
  }

  writeSet(buf: Buffer, off: number, k: number): number {
    buf.set(this.#set, off);
    writeDigits(buf, off + this.#setDigitsEnd, k);
    return off + this.setLength;
  }
}

/** The store's line protocol: `GET <key>` and `SET <key> <value>`, each ending in LF. */
export function createLineEncoder(valueSize: number): CommandEncoder {
  const digits = '#'.repeat(KEY_DIGITS);
  const key = `key:${digits}`;
  return new TemplateEncoder(Buffer.from(`GET ${key}\n`), Buffer.concat([Buffer.from(`SET ${key} `), benchValue(valueSize), Buffer.from('\n')]), digits);
}
