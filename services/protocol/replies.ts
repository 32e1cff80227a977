import { PARSE_ERROR_REASONS } from './command-parser.ts';
import { base64Slice, latin1Write } from '../shared/node-internals.ts';
import { bytesOf } from '../shared/byte-views.ts';
import { base64Length } from './limits.ts';

/**
 * The store's reply lines (SPEC §1), both ways, in one place: the store writes them with
 * the encoders below, and the client library and the CLI read them with decodeReply.
 * test/protocol-replies.test.ts round-trips every kind and fails when a module outside
 * services/protocol/ spells a reply of its own.
 *
 * The encoders suit the store's hot path: the fixed replies are byte constants that the
 * store copies into its reply buffer, a GET's reply is written straight into that buffer
 * (base64 included), and only USAGE, TTL and STATS build a short string.
 */

/** The first word of each kind of reply line. */
export const REPLY_WORDS = Object.freeze({
  ok: 'OK',
  notFound: 'NOT_FOUND',
  pong: 'PONG',
  bye: 'BYE',
  value: 'VALUE',
  usage: 'USAGE',
  ttl: 'TTL',
  stats: 'STATS',
  error: 'ERROR',
});

/** The reasons of `ERROR <reason>` other than the parse errors (those are the parser's reasons, read with spaces). */
export const ERROR_REASONS = Object.freeze({
  outOfMemory: 'out of memory',
  lineTooLong: 'line too long',
  maxConnections: 'max connections reached',
  // SPEC §8: the store's password.
  authenticationRequired: 'authentication required',
  invalidPassword: 'invalid password',
  authenticationNotEnabled: 'authentication not enabled',
});

/** `ERROR <reason>` without its LF. */
export const errorLine = (reason: string): string => `${REPLY_WORDS.error} ${reason}`;

// --- Encoding (the store) -------------------------------------------------------------

const LF = 0x0a;
const fixed = (line: string): Buffer => Buffer.from(`${line}\n`, 'latin1');

export const OK_REPLY = fixed(REPLY_WORDS.ok);
export const NOT_FOUND_REPLY = fixed(REPLY_WORDS.notFound);
export const PONG_REPLY = fixed(REPLY_WORDS.pong);
export const BYE_REPLY = fixed(REPLY_WORDS.bye);
export const OUT_OF_MEMORY_REPLY = fixed(errorLine(ERROR_REASONS.outOfMemory));
export const LINE_TOO_LONG_REPLY = fixed(errorLine(ERROR_REASONS.lineTooLong));
export const MAX_CONNECTIONS_REPLY = fixed(errorLine(ERROR_REASONS.maxConnections));
export const AUTHENTICATION_REQUIRED_REPLY = fixed(errorLine(ERROR_REASONS.authenticationRequired));
export const INVALID_PASSWORD_REPLY = fixed(errorLine(ERROR_REASONS.invalidPassword));
export const AUTHENTICATION_NOT_ENABLED_REPLY = fixed(errorLine(ERROR_REASONS.authenticationNotEnabled));

/** The reason of each parse error code as the reply says it (index 0 unused). */
export const PARSE_ERROR_REPLY_REASONS: readonly string[] = PARSE_ERROR_REASONS.map((r) => r.replaceAll('_', ' '));
/** The reply line of each parse error code, LF included (index 0 unused). */
export const PARSE_ERROR_REPLIES: readonly string[] = PARSE_ERROR_REPLY_REASONS.map((r) => (r === '' ? '' : `${errorLine(r)}\n`));
/** The same as bytes, for the store's reply buffer. */
export const PARSE_ERROR_REPLY_BYTES: readonly Buffer[] = PARSE_ERROR_REPLIES.map((r) => Buffer.from(r, 'latin1'));

/** `USAGE <bytes>` with its LF. */
export const usageReply = (bytes: number): string => `${REPLY_WORDS.usage} ${bytes}\n`;

/** `TTL <seconds>` (-1: no expiry) with its LF. */
export const ttlReply = (seconds: number): string => `${REPLY_WORDS.ttl} ${seconds}\n`;

/** `STATS name=value ...` with its LF; names and values hold no space or `=`. */
export function statsReply(stats: Readonly<Record<string, string | number>>): string {
  let line: string = REPLY_WORDS.stats;
  for (const name in stats) line += ` ${name}=${stats[name]}`;
  return `${line}\n`;
}

const VALUE_PREFIX = Buffer.from(`${REPLY_WORDS.value} `, 'latin1');

/**
 * Values up to this many bytes are encoded here, straight into the reply; longer ones by
 * Node (a string from base64Slice, copied in with latin1Write), whose two native calls and
 * the string between them cost a few hundred ns whatever the length. Read through its
 * page's DataView (writeBase64), the loop here is the faster up to about 512 to 768 bytes.
 * The pages must be plain buffers (record-arena.ts): through a view of a resizable one the
 * loop costs about twice as much. See docs/benchmarks.md#throughput-against-redis.
 */
export const INLINE_BASE64_MAX_BYTES = 512;
const BASE64_ALPHABET = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', 'latin1');
const BASE64_PAD = 0x3d; // =
/** The two characters of each 12-bit group: the first in the low byte. */
const BASE64_PAIRS = new Uint16Array(4096);
for (let i = 0; i < 4096; i++) BASE64_PAIRS[i] = BASE64_ALPHABET[i >>> 6]! | (BASE64_ALPHABET[i & 63]! << 8);
/** The four characters of a 24-bit group as one little-endian 32-bit word: the first character lands first. */
const base64Word = (n: number): number => BASE64_PAIRS[n >>> 12]! | (BASE64_PAIRS[n & 4095]! << 16);

/**
 * A buffer replies are written into, with a DataView over it: the base64 of a value goes
 * in four characters at a time, one 32-bit store instead of four byte stores, each
 * checked against the buffer's bounds. A DataView made per reply costs more than it
 * saves, so one is made per buffer and the store's pool keeps them.
 */
export class ReplyTarget {
  readonly bytes: Buffer;
  readonly view: DataView;

  constructor(bytes: Buffer) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
}

/**
 * Writes the base64 of src[start, end) into target at `at` (room made); returns the offset
 * after it. The value is read through the page's DataView twelve bytes a step, as three
 * big-endian 32-bit loads that make four 24-bit groups: a byte load from a Buffer costs
 * about as much as a 32-bit load, and the loads are most of the loop. Twelve bytes a step
 * rather than six: see docs/benchmarks.md#throughput-against-redis.
 */
function writeBase64(target: ReplyTarget, at: number, src: DataView, start: number, end: number): number {
  const view = target.view;
  let i = start;
  for (const whole = end - 11; i < whole; i += 12) {
    const a = src.getUint32(i);
    const b = src.getUint32(i + 4);
    const c = src.getUint32(i + 8);
    view.setUint32(at, base64Word(a >>> 8), true);
    view.setUint32(at + 4, base64Word(((a & 0xff) << 16) | (b >>> 16)), true);
    view.setUint32(at + 8, base64Word(((b & 0xffff) << 8) | (c >>> 24)), true);
    view.setUint32(at + 12, base64Word(c & 0xffffff), true);
    at += 16;
  }
  for (const whole = end - 2; i < whole; i += 3) {
    view.setUint32(at, base64Word((src.getUint8(i) << 16) | (src.getUint8(i + 1) << 8) | src.getUint8(i + 2)), true);
    at += 4;
  }
  if (i < end) {
    // One or two bytes left: two or three characters, then padding to four.
    const bytes = target.bytes;
    const two = i + 1 < end;
    const n = (src.getUint8(i) << 16) | (two ? src.getUint8(i + 1) << 8 : 0);
    bytes[at] = BASE64_ALPHABET[n >>> 18]!;
    bytes[at + 1] = BASE64_ALPHABET[(n >>> 12) & 63]!;
    bytes[at + 2] = two ? BASE64_ALPHABET[(n >>> 6) & 63]! : BASE64_PAD;
    bytes[at + 3] = BASE64_PAD;
    at += 4;
  }
  return at;
}

/** Bytes of `VALUE <base64>\n` for a value of `valueBytes` bytes. */
export const valueReplyLength = (valueBytes: number): number => VALUE_PREFIX.length + base64Length(valueBytes) + 1;

/**
 * Writes `VALUE <base64 of page[start, end)>\n` into target at `at` (which has room for
 * valueReplyLength) and returns the offset after it. `page`: a view of the memory holding
 * the value (the store's record pages: record-arena.ts).
 */
export function writeValueReply(target: ReplyTarget, at: number, page: DataView, start: number, end: number): number {
  const bytes = target.bytes;
  for (let i = 0; i < VALUE_PREFIX.length; i++) bytes[at++] = VALUE_PREFIX[i]!;
  if (end - start <= INLINE_BASE64_MAX_BYTES) at = writeBase64(target, at, page, start, end);
  else at += latin1Write(bytes, base64Slice(bytesOf(page, start, end), 0, end - start), at);
  bytes[at++] = LF;
  return at;
}

// --- Decoding (the client library, the CLI) -------------------------------------------

/** One reply line, read. `unknown` is any line the protocol does not define. */
export type Reply =
  | { readonly kind: 'ok' }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'pong' }
  | { readonly kind: 'bye' }
  | { readonly kind: 'value'; readonly value: Buffer }
  | { readonly kind: 'usage'; readonly bytes: number }
  | { readonly kind: 'ttl'; readonly seconds: number }
  | { readonly kind: 'stats'; readonly stats: Readonly<Record<string, string>> }
  | { readonly kind: 'error'; readonly reason: string }
  | { readonly kind: 'unknown'; readonly line: string };

export type ReplyKind = Reply['kind'];

/** The kinds the protocol defines (every one but `unknown`): each has its encoder above. */
export const REPLY_KINDS = Object.freeze(['ok', 'not_found', 'pong', 'bye', 'value', 'usage', 'ttl', 'stats', 'error'] as const satisfies readonly Exclude<ReplyKind, 'unknown'>[]);

// The replies without a payload are shared: reading them allocates nothing.
const OK: Reply = Object.freeze({ kind: 'ok' });
const NOT_FOUND: Reply = Object.freeze({ kind: 'not_found' });
const PONG: Reply = Object.freeze({ kind: 'pong' });
const BYE: Reply = Object.freeze({ kind: 'bye' });

const VALUE_WITH_SPACE = `${REPLY_WORDS.value} `;
const ERROR_WITH_SPACE = `${REPLY_WORDS.error} `;
const STATS_WITH_SPACE = `${REPLY_WORDS.stats} `;
const USAGE_LINE = new RegExp(`^${REPLY_WORDS.usage} (\\d+)$`);
const TTL_LINE = new RegExp(`^${REPLY_WORDS.ttl} (-1|\\d+)$`);

/** Reads one reply line (without its LF; a trailing CR already dropped by the framer). */
export function decodeReply(line: string): Reply {
  switch (line) {
    case REPLY_WORDS.ok:
      return OK;
    case REPLY_WORDS.notFound:
      return NOT_FOUND;
    case REPLY_WORDS.pong:
      return PONG;
    case REPLY_WORDS.bye:
      return BYE;
    // An empty value is `VALUE ` (SPEC); a line stripped of its trailing space is read the same.
    case REPLY_WORDS.value:
      return { kind: 'value', value: Buffer.alloc(0) };
    case REPLY_WORDS.stats:
      return { kind: 'stats', stats: {} };
  }
  if (line.startsWith(VALUE_WITH_SPACE)) return { kind: 'value', value: Buffer.from(line.slice(VALUE_WITH_SPACE.length), 'base64') };
  if (line.startsWith(ERROR_WITH_SPACE)) return { kind: 'error', reason: line.slice(ERROR_WITH_SPACE.length) };
  if (line.startsWith(STATS_WITH_SPACE)) return { kind: 'stats', stats: statsOf(line.slice(STATS_WITH_SPACE.length)) };
  let m = TTL_LINE.exec(line);
  if (m) return { kind: 'ttl', seconds: Number(m[1]) };
  m = USAGE_LINE.exec(line);
  if (m) return { kind: 'usage', bytes: Number(m[1]) };
  return { kind: 'unknown', line };
}

function statsOf(pairs: string): Record<string, string> {
  const stats: Record<string, string> = {};
  for (const pair of pairs.split(' ')) {
    const eq = pair.indexOf('=');
    if (eq > 0) stats[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return stats;
}
