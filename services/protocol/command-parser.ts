import { viewOf } from '../shared/byte-views.ts';
import { COMMAND_TABLE, type KnownCommandName } from './command-table.ts';
import { isValidKeyBytes, plainKeyEnd } from './key-rules.ts';
import { MAX_KEY_BYTES, MAX_TTL_DIGITS, MAX_TTL_SECONDS } from './limits.ts';

/**
 * Store-side parsing of one protocol line (SPEC §1) straight from the socket bytes.
 *
 * The hot path allocates nothing: the command name is matched by length and a
 * case-insensitive byte compare, and the result goes into a reusable ParsedCommand
 * as offsets into the line's buffer. The caller turns key and value into strings.
 *
 * Precedence of errors, so every line has exactly one answer:
 *   empty line → empty command; unknown name (or a line of spaces) → unknown command;
 *   missing arguments → wrong number of arguments; bad key (an empty key included) →
 *   invalid key; extra arguments → wrong number of arguments; bad seconds → invalid
 *   expire time; value over the limit → value too large.
 */

// Command codes index the tables below and the metrics arrays: a command's code is its
// row in COMMAND_TABLE (test/command-table.test.ts checks these constants against it).
export const SET = 0;
export const GET = 1;
export const DELETE = 2;
export const USAGE = 3;
export const QUIT = 4;
export const PING = 5;
export const SETEX = 6;
export const EXPIRE = 7;
export const TTL = 8;
export const STATS = 9;
export const AUTH = 10;
export const UNKNOWN = 11;

/** The `command` metric label of each code (upper-case name, or UNKNOWN): the command table's names. */
export const COMMAND_NAMES = [...COMMAND_TABLE.map((c) => c.name), 'UNKNOWN'] as const;
export type CommandName = KnownCommandName | 'UNKNOWN';

// Parse error codes; 0 means the line is a well-formed command.
export const OK = 0;
export const EMPTY_COMMAND = 1;
export const UNKNOWN_COMMAND = 2;
export const WRONG_NUMBER_OF_ARGUMENTS = 3;
export const INVALID_KEY = 4;
export const INVALID_EXPIRE_TIME = 5;
export const VALUE_TOO_LARGE = 6;

/** The `reason` metric label of each parse error code (index 0 unused). */
export const PARSE_ERROR_REASONS = [
  '',
  'empty_command',
  'unknown_command',
  'wrong_number_of_arguments',
  'invalid_key',
  'invalid_expire_time',
  'value_too_large',
] as const;

/** Where the parts of a line are; reused from line to line. */
export class ParsedCommand {
  command = UNKNOWN;
  keyStart = 0;
  keyEnd = 0;
  /** SET and SETEX: the value; AUTH: the password (the rest of the line, maybe empty). */
  valueStart = 0;
  valueEnd = 0;
  /** SETEX and EXPIRE: 1 to MAX_TTL_SECONDS. */
  seconds = 0;
}

const SPACE = 0x20;

// Lower-case the byte if it is an ASCII letter; names are all letters, so `| 0x20`
// can only make a letter match its own other case.
const lc = (b: number): number => b | 0x20;

/** Matches the name bytes buf[s, s+len) against the known commands. */
function commandOf(buf: Buffer, s: number, len: number): number {
  switch (len) {
    case 3: {
      const a = lc(buf[s]!), b = lc(buf[s + 1]!), c = lc(buf[s + 2]!);
      if (b === 0x65 /* e */ && c === 0x74 /* t */) {
        if (a === 0x73 /* s */) return SET;
        if (a === 0x67 /* g */) return GET;
      } else if (a === 0x74 && b === 0x74 && c === 0x6c /* ttl */) return TTL;
      return UNKNOWN;
    }
    case 4: {
      const a = lc(buf[s]!), b = lc(buf[s + 1]!), c = lc(buf[s + 2]!), d = lc(buf[s + 3]!);
      if (a === 0x70 && b === 0x69 && c === 0x6e && d === 0x67 /* ping */) return PING;
      if (a === 0x71 && b === 0x75 && c === 0x69 && d === 0x74 /* quit */) return QUIT;
      if (a === 0x61 && b === 0x75 && c === 0x74 && d === 0x68 /* auth */) return AUTH;
      return UNKNOWN;
    }
    case 5:
      if (matches(buf, s, 'setex')) return SETEX;
      if (matches(buf, s, 'usage')) return USAGE;
      if (matches(buf, s, 'stats')) return STATS;
      return UNKNOWN;
    case 6:
      if (matches(buf, s, 'delete')) return DELETE;
      if (matches(buf, s, 'expire')) return EXPIRE;
      return UNKNOWN;
    default:
      return UNKNOWN;
  }
}

function matches(buf: Buffer, s: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) if (lc(buf[s + i]!) !== lower.charCodeAt(i)) return false;
  return true;
}

/** Index of the first space in buf[from, end), or -1. */
function spaceAt(buf: Buffer, from: number, end: number): number {
  for (let i = from; i < end; i++) if (buf[i] === SPACE) return i;
  return -1;
}

/**
 * Reads the key that starts at buf[start] into out.keyStart and out.keyEnd (the first space
 * in [start, end), or end) and returns whether it keeps the key rules. A key of printable
 * ASCII, nearly every key, is found and checked in one pass four bytes a step
 * (plainKeyEnd); any other is searched on from where that pass stopped and checked byte by
 * byte (isValidKeyBytes), which tells a valid key with other UTF-8 characters from an
 * invalid one.
 */
function readKey(buf: Buffer, start: number, end: number, out: ParsedCommand): boolean {
  const plainEnd = plainKeyEnd(viewOf(buf), start, end);
  let keyEnd = plainEnd;
  if (plainEnd < end && buf[plainEnd] !== SPACE) {
    const sp = spaceAt(buf, plainEnd, end);
    keyEnd = sp === -1 ? end : sp;
  }
  out.keyStart = start;
  out.keyEnd = keyEnd;
  if (keyEnd !== plainEnd) return isValidKeyBytes(buf, start, keyEnd);
  return keyEnd > start && keyEnd - start <= MAX_KEY_BYTES;
}

/** Decimal digits only, 1 to MAX_TTL_SECONDS; returns 0 when invalid. */
function secondsOf(buf: Buffer, start: number, end: number): number {
  const len = end - start;
  if (len < 1 || len > MAX_TTL_DIGITS) return 0;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) return 0;
    n = n * 10 + d;
  }
  return n >= 1 && n <= MAX_TTL_SECONDS ? n : 0;
}

/**
 * Parses the line buf[start, end) (LF and a trailing CR already removed) into `out`.
 * Returns OK or a parse error code; `out.command` is set whenever the name is known,
 * so errors can be counted per command.
 */
export function parseCommand(buf: Buffer, start: number, end: number, maxValueBytes: number, out: ParsedCommand): number {
  if (end === start) {
    out.command = UNKNOWN;
    return EMPTY_COMMAND;
  }
  // The name ends at the first space; the longest name has 6 bytes.
  let nameEnd = start;
  const nameLimit = Math.min(end, start + 7);
  while (nameEnd < nameLimit && buf[nameEnd] !== SPACE) nameEnd++;
  const command = commandOf(buf, start, nameEnd - start);
  out.command = command;
  if (command === UNKNOWN) return UNKNOWN_COMMAND;

  const hasArgs = nameEnd < end; // then buf[nameEnd] is the space after the name
  const argStart = nameEnd + 1;

  switch (command) {
    case GET:
    case DELETE:
    case TTL: {
      if (!hasArgs) return WRONG_NUMBER_OF_ARGUMENTS;
      if (!readKey(buf, argStart, end, out)) return INVALID_KEY;
      return out.keyEnd === end ? OK : WRONG_NUMBER_OF_ARGUMENTS;
    }
    case SET: {
      if (!hasArgs) return WRONG_NUMBER_OF_ARGUMENTS;
      const validKey = readKey(buf, argStart, end, out);
      const sp = out.keyEnd;
      if (sp === end) return WRONG_NUMBER_OF_ARGUMENTS;
      if (!validKey) return INVALID_KEY;
      if (end - (sp + 1) > maxValueBytes) return VALUE_TOO_LARGE;
      out.valueStart = sp + 1;
      out.valueEnd = end;
      return OK;
    }
    case SETEX: {
      if (!hasArgs) return WRONG_NUMBER_OF_ARGUMENTS;
      const validKey = readKey(buf, argStart, end, out);
      const sp1 = out.keyEnd;
      if (sp1 === end) return WRONG_NUMBER_OF_ARGUMENTS;
      const sp2 = spaceAt(buf, sp1 + 1, end);
      if (sp2 === -1) return WRONG_NUMBER_OF_ARGUMENTS;
      if (!validKey) return INVALID_KEY;
      const seconds = secondsOf(buf, sp1 + 1, sp2);
      if (seconds === 0) return INVALID_EXPIRE_TIME;
      if (end - (sp2 + 1) > maxValueBytes) return VALUE_TOO_LARGE;
      out.seconds = seconds;
      out.valueStart = sp2 + 1;
      out.valueEnd = end;
      return OK;
    }
    case EXPIRE: {
      if (!hasArgs) return WRONG_NUMBER_OF_ARGUMENTS;
      const validKey = readKey(buf, argStart, end, out);
      const sp1 = out.keyEnd;
      if (sp1 === end) return WRONG_NUMBER_OF_ARGUMENTS;
      if (!validKey) return INVALID_KEY;
      const sp2 = spaceAt(buf, sp1 + 1, end);
      if (sp2 !== -1) return WRONG_NUMBER_OF_ARGUMENTS;
      const seconds = secondsOf(buf, sp1 + 1, end);
      if (seconds === 0) return INVALID_EXPIRE_TIME;
      out.seconds = seconds;
      return OK;
    }
    case AUTH:
      if (!hasArgs) return WRONG_NUMBER_OF_ARGUMENTS;
      out.valueStart = argStart;
      out.valueEnd = end;
      return OK;
    default:
      // USAGE, QUIT, PING, STATS take no arguments.
      return hasArgs ? WRONG_NUMBER_OF_ARGUMENTS : OK;
  }
}
