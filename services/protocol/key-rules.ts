import { isUtf8 } from 'node:buffer';
import { MAX_KEY_BYTES } from './limits.ts';

// Key rules of SPEC §1: 1 to MAX_KEY_BYTES bytes of UTF-8, no byte in 0x00–0x20 or 0x7F.

/** Checks the key bytes buf[start, end) without copying them. */
export function isValidKeyBytes(buf: Uint8Array, start: number, end: number): boolean {
  const len = end - start;
  if (len < 1 || len > MAX_KEY_BYTES) return false;
  let ascii = true;
  for (let i = start; i < end; i++) {
    const b = buf[i]!;
    if (b <= 0x20 || b === 0x7f) return false;
    if (b >= 0x80) ascii = false;
  }
  // Non-ASCII keys must be well-formed UTF-8 (rare, so checked only then).
  return ascii || isUtf8(buf.subarray(start, end));
}

/**
 * Where a run of printable ASCII bytes (0x21 to 0x7E: what nearly every key is made of)
 * that starts at `start` ends: the first byte in [start, end) outside that range, or end.
 * Read through a view of the line, four bytes a step; a word with any byte outside the
 * range (a space, a control byte, DEL, or a byte of a multi-byte character) is finished
 * a byte at a time. The parser's fast path: the key is valid when the run ends at a space
 * or the line's end and its length is within the bounds; anything else is left to
 * isValidKeyBytes.
 */
export function plainKeyEnd(view: DataView, start: number, end: number): number {
  let i = start;
  for (const words = end - 3; i < words; i += 4) {
    const w = view.getInt32(i, true);
    // A byte's high bit in the result: it is >= 0x80, or < 0x21 (its subtraction borrows),
    // or 0x7F (its xor is 0, whose decrement borrows). Borrows carry only upwards from a
    // byte already flagged, so a word with no flag has every byte in range.
    if (((w | (w - 0x21212121) | ((w ^ 0x7f7f7f7f) - 0x01010101)) & 0x80808080) !== 0) break;
  }
  for (; i < end; i++) {
    const b = view.getUint8(i);
    if (b <= 0x20 || b >= 0x7f) break;
  }
  return i;
}

/** Checks a key given as a JS string (as HTTP and CLI callers hold it). */
export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > MAX_KEY_BYTES) return false;
  if (!key.isWellFormed()) return false;
  const bytes = Buffer.from(key, 'utf8');
  return isValidKeyBytes(bytes, 0, bytes.length);
}
