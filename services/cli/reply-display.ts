import { decodeReply } from '../protocol/replies.ts';

/**
 * How the interactive client shows a raw reply line (documented in `kv help`):
 * `VALUE <base64>` is decoded — quoted with escapes on a terminal (like redis-cli,
 * so an empty value or trailing spaces are visible), the raw bytes when stdin is
 * piped (a value has no LF, so it is still one line); `NOT_FOUND` is `(nil)`;
 * `ERROR <reason>` is `(error) <reason>`; every other reply is shown verbatim.
 */
export function displayReply(line: string, quoted: boolean): string | Buffer {
  const reply = decodeReply(line);
  switch (reply.kind) {
    case 'not_found':
      return '(nil)';
    case 'error':
      return `(error) ${reply.reason}`;
    case 'value':
      return quoted ? quoteValue(reply.value) : reply.value;
    default:
      return line;
  }
}

const ESCAPES: Record<number, string> = { 0x22: '\\"', 0x5c: '\\\\', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t', 0x07: '\\a', 0x08: '\\b' };

/** `"..."` with `\"`, `\\`, `\n`, `\r`, `\t` and `\xNN` for other control bytes and invalid UTF-8. */
export function quoteValue(value: Buffer): string {
  let out = '"';
  let i = 0;
  while (i < value.length) {
    const b = value[i]!;
    const esc = ESCAPES[b];
    if (esc) {
      out += esc;
      i++;
    } else if (b < 0x20 || b === 0x7f) {
      out += `\\x${b.toString(16).padStart(2, '0')}`;
      i++;
    } else if (b < 0x80) {
      out += String.fromCharCode(b);
      i++;
    } else {
      const len = utf8SequenceLength(value, i);
      if (len === 0) {
        out += `\\x${b.toString(16)}`;
        i++;
      } else {
        out += value.toString('utf8', i, i + len);
        i += len;
      }
    }
  }
  return out + '"';
}

/** Length of a well-formed UTF-8 sequence starting at i, or 0. */
function utf8SequenceLength(buf: Buffer, i: number): number {
  const b = buf[i]!;
  const len = b >= 0xf0 ? (b <= 0xf4 ? 4 : 0) : b >= 0xe0 ? 3 : b >= 0xc2 ? 2 : 0;
  if (len === 0 || i + len > buf.length) return 0;
  for (let k = 1; k < len; k++) if ((buf[i + k]! & 0xc0) !== 0x80) return 0;
  // Reject overlongs and surrogates by round-tripping (rare path: non-ASCII only).
  const s = buf.toString('utf8', i, i + len);
  return s.length > 0 && !s.includes('\ufffd') ? len : 0;
}
