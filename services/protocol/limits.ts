// The protocol's bounds (SPEC §1), in one place: the store's parser and framer, the
// backend, the client library and the CLI check against these and build their messages
// from them, so a bound cannot be changed in one of them and not the others
// (test/protocol-limits.test.ts checks that no other module spells them).

/** Longest key in bytes. */
export const MAX_KEY_BYTES = 250;

/** Largest time to live, in seconds, for SETEX, EXPIRE and the backend's `?ttl=` (the least is 1). */
export const MAX_TTL_SECONDS = 1_000_000_000;

/** Digits of MAX_TTL_SECONDS: a longer run of digits is out of range without being read. */
export const MAX_TTL_DIGITS = String(MAX_TTL_SECONDS).length;

/** True for a whole number of seconds from 1 to MAX_TTL_SECONDS. */
export const isValidTtlSeconds = (seconds: number): boolean => Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_TTL_SECONDS;

/**
 * Room on a line beside the value: the longest command head (`SETEX`, a key of
 * MAX_KEY_BYTES, the seconds' digits, three spaces) and a CR, with margin.
 */
export const LINE_ROOM_BYTES = 512;

/** The longest command line the store reads (the bytes before its LF, a CR included). */
export const lineBound = (maxValueBytes: number): number => maxValueBytes + LINE_ROOM_BYTES;

/** Bytes of base64 for `bytes` bytes (standard alphabet, padded). */
export const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3);

/**
 * The longest reply line a client should accept from a store whose values are at most
 * `maxValueBytes`: `VALUE ` and the base64 of the largest value (every other reply is
 * short), with the same room as the command line bound.
 */
export const replyLineBound = (maxValueBytes: number): number => base64Length(maxValueBytes) + LINE_ROOM_BYTES;

/**
 * A client's reply line bound when it is not told the store's MAX_VALUE_BYTES: enough for
 * values up to 48 MiB, and a bound on what a misbehaving peer can make it hold.
 */
export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024;
