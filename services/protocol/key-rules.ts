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

/** Checks a key given as a JS string (as HTTP and CLI callers hold it). */
export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > MAX_KEY_BYTES) return false;
  if (!key.isWellFormed()) return false;
  const bytes = Buffer.from(key, 'utf8');
  return isValidKeyBytes(bytes, 0, bytes.length);
}
