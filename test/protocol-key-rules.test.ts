// The parser's fast path for keys (plainKeyEnd, four bytes a step) must find the same end
// as a byte-by-byte reading, whatever byte breaks the run and wherever it sits in a word;
// and the parser's answers must not depend on which path a key took.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INVALID_KEY, OK, ParsedCommand, parseCommand, WRONG_NUMBER_OF_ARGUMENTS } from '../services/protocol/command-parser.ts';
import { isValidKeyBytes, plainKeyEnd } from '../services/protocol/key-rules.ts';
import { MAX_KEY_BYTES } from '../services/protocol/limits.ts';
import { viewOf } from '../services/shared/byte-views.ts';

/** The first byte of buf[start, end) outside 0x21–0x7E, or end: plainKeyEnd's contract, a byte at a time. */
function plainEndByBytes(buf: Uint8Array, start: number, end: number): number {
  let i = start;
  while (i < end && buf[i]! >= 0x21 && buf[i]! <= 0x7e) i++;
  return i;
}

describe('plainKeyEnd', () => {
  it('stops at every byte outside 0x21-0x7E, at every position of a word, at every alignment', () => {
    for (let shift = 0; shift < 4; shift++) {
      for (let len = 1; len <= 13; len++) {
        for (let at = 0; at < len; at++) {
          for (let b = 0; b < 256; b++) {
            const whole = Buffer.alloc(shift + len + 4, 0x61);
            const buf = whole.subarray(shift, shift + len + 4);
            buf[at] = b;
            const want = b >= 0x21 && b <= 0x7e ? len : at;
            expect(plainKeyEnd(viewOf(buf), 0, len)).toBe(want);
          }
        }
      }
    }
  });

  it('is the byte-by-byte reading on any bytes (several bad ones, borrows across a word)', () => {
    const interesting = [0x00, 0x01, 0x20, 0x21, 0x22, 0x7e, 0x7f, 0x80, 0xa1, 0xff, 0x61];
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...interesting), fc.integer({ min: 0, max: 255 })), { maxLength: 40 }), fc.nat(3), fc.nat(40), (bytes, shift, from) => {
        const buf = Buffer.alloc(bytes.length + shift).subarray(shift);
        buf.set(bytes);
        const start = Math.min(from, buf.length);
        expect(plainKeyEnd(viewOf(buf), start, buf.length)).toBe(plainEndByBytes(buf, start, buf.length));
      }),
      { numRuns: 5000 },
    );
  });
});

describe('the parser reads a key alike on its fast path and its long one', () => {
  /** The parser's verdict on a key, reached without the fast path: the key rules on their own. */
  function expected(command: 'GET' | 'SET', key: Buffer): string {
    const sp = key.indexOf(0x20);
    if (command === 'SET') return sp === -1 ? 'wrong' : isValidKeyBytes(key, 0, sp) ? `ok:${sp}` : 'invalid';
    return !isValidKeyBytes(key, 0, sp === -1 ? key.length : sp) ? 'invalid' : sp === -1 ? `ok:${key.length}` : 'wrong';
  }

  it('GET and SET keys of every kind: plain, UTF-8, control bytes, over-long, with spaces after them', () => {
    const keyByte = fc.oneof(fc.integer({ min: 0x21, max: 0x7e }), fc.constantFrom(0x20, 0x7f, 0x00, 0x0d, 0xc3, 0xa9, 0xff));
    fc.assert(
      fc.property(fc.constantFrom('GET' as const, 'SET' as const), fc.array(keyByte, { minLength: 0, maxLength: MAX_KEY_BYTES + 3 }), fc.nat(3), (command, keyBytes, shift) => {
        const key = Buffer.from(keyBytes);
        const line = Buffer.concat([Buffer.alloc(shift, 0x0a), Buffer.from(`${command} `), key]);
        const out = new ParsedCommand();
        const code = parseCommand(line, shift, line.length, 1 << 20, out);
        const argStart = shift + command.length + 1;
        const got = code === OK ? `ok:${out.keyEnd - argStart}` : code === INVALID_KEY ? 'invalid' : code === WRONG_NUMBER_OF_ARGUMENTS ? 'wrong' : `code ${code}`;
        expect(got).toBe(expected(command, key));
      }),
      { numRuns: 5000 },
    );
  });
});
