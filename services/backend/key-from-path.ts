import { isValidKeyBytes } from '../protocol/key-rules.ts';
import { MAX_KEY_BYTES } from '../protocol/limits.ts';

/** The key of a request, or why there is none (SPEC §2: both are 400, with different words). */
export type KeyResult = { readonly key: string } | { readonly error: 'missing' | 'invalid' };

const MISSING = Object.freeze({ error: 'missing' as const });
const INVALID = Object.freeze({ error: 'invalid' as const });

const SLASH = 0x2f;
const QUESTION = 0x3f;
const PERCENT = 0x25;

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/**
 * The key is the first path segment of the request target, percent-decoded; further
 * segments and the query are ignored. Decoding works on bytes, so `%FF` or a raw
 * non-UTF-8 byte is refused instead of turning into U+FFFD, and the decoded bytes must
 * pass the store's own key rules (no space or control character can reach the line).
 */
export function keyFromPath(url: string): KeyResult {
  let path = url;
  if (path.charCodeAt(0) !== SLASH) {
    // absolute-form (`GET http://host/key`) or `*`: only a URL with a path has a key
    if (!URL.canParse(path)) return MISSING;
    path = new URL(path).pathname;
  }
  let end = 1;
  const len = path.length;
  while (end < len) {
    const c = path.charCodeAt(end);
    if (c === SLASH || c === QUESTION) break;
    end++;
  }
  if (end === 1) return MISSING;

  // Fast path: plain printable ASCII, nothing to decode.
  let plain = end - 1 <= MAX_KEY_BYTES;
  for (let i = 1; plain && i < end; i++) {
    const c = path.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || c === PERCENT) plain = false;
  }
  if (plain) return { key: path.slice(1, end) };

  // Each encoded byte is at least one character, so a segment of more than 3 × 250
  // characters cannot decode to a valid key; refuse it before allocating.
  if (end - 1 > MAX_KEY_BYTES * 3) return INVALID;
  const bytes = Buffer.allocUnsafe(end - 1);
  let n = 0;
  for (let i = 1; i < end; i++) {
    const c = path.charCodeAt(i);
    if (c === PERCENT) {
      const hi = i + 2 < end ? hexValue(path.charCodeAt(i + 1)) : -1;
      const lo = hi >= 0 ? hexValue(path.charCodeAt(i + 2)) : -1;
      if (lo < 0) return INVALID;
      bytes[n++] = (hi << 4) | lo;
      i += 2;
    } else if (c > 0xff) {
      // Node hands raw bytes of the request line over as latin1: never above 0xFF.
      return INVALID;
    } else {
      bytes[n++] = c;
    }
  }
  if (!isValidKeyBytes(bytes, 0, n)) return INVALID;
  return { key: bytes.toString('utf8', 0, n) };
}
