// The module's binding, not the global (a getter looked up on every call): see served-connection.ts.
import { performance } from 'node:perf_hooks';
import { AUTH, DELETE, EXPIRE, GET, OK, ParsedCommand, PING, QUIT, SET, SETEX, STATS, TTL, USAGE, parseCommand } from '../../protocol/command-parser.ts';
import {
  AUTHENTICATION_NOT_ENABLED_REPLY, AUTHENTICATION_REQUIRED_REPLY, BYE_REPLY, INVALID_PASSWORD_REPLY, NOT_FOUND_REPLY, OK_REPLY, OUT_OF_MEMORY_REPLY,
  PARSE_ERROR_REPLY_BYTES, PONG_REPLY, ttlReply, usageReply,
} from '../../protocol/replies.ts';
import { scanKeys, type ScanEnough } from '../../protocol/key-scan.ts';
import { LineEnds } from '../../protocol/line-framer.ts';
import { OneLineReads } from './one-line-reads.ts';
import { PrefetchedKeys } from '../engine/prefetched-keys.ts';
import type { ReplyBuffer } from './reply-buffer.ts';
import { PREFETCH_BATCH, ValueRange, type StoreEngine } from '../engine/engine-api.ts';
import { AUTHENTICATION_REQUIRED, RESULT_ERROR, RESULT_NOT_FOUND, RESULT_OK, reasonIndexOfParseError, type StoreMetrics } from '../store-metrics.ts';
import { PasswordCheck } from './password-check.ts';

// What the connection does after a line (CommandRunner.run, runBeforeAuth).
/** Nothing: it goes on with the next line. */
export const GO_ON = 0;
/** QUIT: nothing more runs; the socket ends once the replies are written. */
export const CLOSE = 1;
/** A wrong password: one more failed attempt (MAX_AUTH_FAILURES closes the connection). */
export const AUTH_FAILED = 2;
/** The right password: the connection runs every command from the next line on. */
export const AUTHENTICATED = 3;
export type AfterLine = typeof GO_ON | typeof CLOSE | typeof AUTH_FAILED | typeof AUTHENTICATED;

export interface CommandRunnerOptions {
  readonly engine: StoreEngine;
  readonly metrics: StoreMetrics;
  readonly maxValueBytes: number;
  /** The STATS reply, LF included (services/protocol/replies.ts statsReply). */
  readonly statsReply: () => string;
  /** The store's password (SPEC §8); none by default: every connection may run every command. */
  readonly password?: PasswordCheck;
}

/**
 * Runs one protocol line against the engine and appends its reply, written with the
 * protocol's encoders (services/protocol/replies.ts); the engine deals in bytes. One runner serves every connection of
 * a server: lines run one at a time, so the parse result, the value location and the
 * command clock are shared and reused.
 */
export class CommandRunner {
  readonly #engine: StoreEngine;
  readonly #metrics: StoreMetrics;
  readonly #maxValueBytes: number;
  readonly #statsReply: () => string;
  readonly #password: PasswordCheck;
  readonly #parsed = new ParsedCommand();
  readonly #value = new ValueRange();
  /** The keys of the last read of many lines, prefetched. */
  readonly #readKeys = new PrefetchedKeys();
  readonly #oneLineReads = new OneLineReads();
  /** The batch whose lines run now: #readKeys, or the held reads' keys. */
  #batch: PrefetchedKeys = this.#readKeys;
  /** When the last command ended (or the current batch started), for command durations. */
  #lastTick = 0;
  /**
   * The LFs of the lines of the last read scanRead() scanned, for the framer of that
   * read (so the bytes of a line are searched for its LF once, not twice).
   */
  readonly lineEnds = new LineEnds(2 * PREFETCH_BATCH);

  constructor(options: CommandRunnerOptions) {
    this.#engine = options.engine;
    this.#metrics = options.metrics;
    this.#maxValueBytes = options.maxValueBytes;
    this.#statsReply = options.statsReply;
    this.#password = options.password ?? new PasswordCheck(undefined);
  }

  /** The store has a password: a connection starts unauthenticated (runBeforeAuth). */
  get passwordRequired(): boolean {
    return this.#password.enabled;
  }

  /**
   * Input buf[start, end) has arrived: finds the keys of its lines (and their LFs, lineEnds) and
   * returns how many keys it found (up to `enough`, when given: scanKeys). Before lines run one by one, the engine loads what
   * their lookups will touch, all at once (prefetchRead; StoreEngine.prefetch), which
   * overlaps their cache misses. A read of one command (a client that waits for each
   * reply) has nothing to overlap with: it may be held instead (holdRead) and run at the
   * end of the turn (turn-scheduler.ts), after prefetchHeld() has prefetched the turn's
   * one-line reads together (OneLineReads).
   */
  scanRead(buf: Buffer, start: number, end: number, enough?: ScanEnough): number {
    return this.#scan(buf, start, end, enough);
  }

  /** The read buf[start, end) scanRead() just scanned, of one key, copied to heldInput[at, at + end - start): returns `at`, or -1 when the turn's batch is full (run it now). */
  holdRead(buf: Buffer, start: number, end: number): number {
    const keys = this.#readKeys;
    return this.#oneLineReads.hold(buf, start, end, keys.starts[0]!, keys.ends[0]!);
  }

  /** Before the read scanRead() just scanned, with `keys` keys, runs: the engine loads what its lookups will touch. */
  prefetchRead(buf: Buffer, keys: number): void {
    if (keys > 1) this.#readKeys.prefetch(this.#engine, buf, keys);
  }

  /**
   * Before held lines buf[start, end) run again in a later turn (the connection's budget
   * or the turn's was spent): their keys are prefetched as a fresh read's are, and their
   * LFs are in lineEnds.
   */
  prefetchLines(buf: Buffer, start: number, end: number): void {
    this.prefetchRead(buf, this.#scan(buf, start, end));
  }

  /** The keys (and LFs) of the lines in buf[start, end), as the batch to come; how many keys. */
  #scan(buf: Buffer, start: number, end: number, enough?: ScanEnough): number {
    // A pipeline deeper than PREFETCH_BATCH gets its first lines prefetched.
    const keys = this.#readKeys;
    this.#batch = keys;
    keys.clear(); // buf holds new lines, and no batch yet
    return scanKeys(buf, end, keys.starts, keys.ends, this.lineEnds, start, enough);
  }

  /** The buffer of the held copies (holdRead). */
  get heldInput(): Buffer {
    return this.#oneLineReads.input;
  }

  /**
   * Before the turn's held one-line reads run, one after another: prefetches their keys,
   * and starts the command clock (returned) once for all of them.
   */
  prefetchHeld(): number {
    this.#oneLineReads.prefetch(this.#engine);
    this.#batch = this.#oneLineReads.keys;
    const now = performance.now();
    this.startClock(now);
    return now;
  }

  /** After they ran: the copies made by holdRead() are no longer valid. */
  releaseHeld(): void {
    this.#oneLineReads.release();
  }

  /** A batch of lines starts (input arrived, or held lines resume) at `now` (performance.now()): the next command's time runs from it. */
  startClock(now: number): void {
    this.#lastTick = now;
  }

  /**
   * Runs the line buf[start, end) of an authenticated connection (or of any, with no
   * password set) and appends its reply to `out`; returns what the connection does next.
   */
  run(buf: Buffer, start: number, end: number, out: ReplyBuffer): AfterLine {
    const engine = this.#engine;
    const p = this.#parsed;
    const code = parseCommand(buf, start, end, this.#maxValueBytes, p);
    const command = p.command;
    let result = RESULT_OK;
    let after: AfterLine = GO_ON;
    if (code !== OK) {
      out.bytes(PARSE_ERROR_REPLY_BYTES[code]!);
      this.#metrics.protocolErrors[reasonIndexOfParseError(code)]!++;
      result = RESULT_ERROR;
    } else {
      switch (command) {
        case GET: {
          const v = this.#value;
          const page = engine.getAt(buf, p.keyStart, p.keyEnd, v, this.#batch.hintFor(buf, p.keyStart, p.keyEnd));
          if (page !== undefined) {
            out.value(page, v.start, v.end);
          } else {
            out.bytes(NOT_FOUND_REPLY);
            result = RESULT_NOT_FOUND;
          }
          break;
        }
        case SET:
        case SETEX: {
          const seconds = command === SET ? undefined : p.seconds;
          if (engine.setAt(buf, p.keyStart, p.keyEnd, p.valueStart, p.valueEnd, seconds) === 'ok') {
            out.bytes(OK_REPLY);
          } else {
            out.bytes(OUT_OF_MEMORY_REPLY);
            result = RESULT_ERROR;
          }
          break;
        }
        case DELETE:
          engine.deleteAt(buf, p.keyStart, p.keyEnd);
          out.bytes(OK_REPLY);
          break;
        case USAGE:
          out.ascii(usageReply(engine.usageBytes));
          break;
        case PING:
          out.bytes(PONG_REPLY);
          break;
        case EXPIRE:
          if (engine.expireAt(buf, p.keyStart, p.keyEnd, p.seconds)) {
            out.bytes(OK_REPLY);
          } else {
            out.bytes(NOT_FOUND_REPLY);
            result = RESULT_NOT_FOUND;
          }
          break;
        case TTL: {
          const ttl = engine.ttlAt(buf, p.keyStart, p.keyEnd);
          if (ttl === null) {
            out.bytes(NOT_FOUND_REPLY);
            result = RESULT_NOT_FOUND;
          } else {
            out.ascii(ttlReply(ttl));
          }
          break;
        }
        case STATS:
          out.ascii(this.#statsReply());
          break;
        case QUIT:
          out.bytes(BYE_REPLY);
          after = CLOSE;
          break;
        case AUTH:
          // Already authenticated, or no password set: a failure still counts against the connection.
          if (!this.#password.enabled) {
            out.bytes(AUTHENTICATION_NOT_ENABLED_REPLY);
            result = RESULT_ERROR;
          } else if (!this.#checkPassword(buf, out)) {
            result = RESULT_ERROR;
            after = AUTH_FAILED;
          }
          break;
      }
    }
    this.#record(command, result);
    return after;
  }

  /**
   * Runs the line buf[start, end) of a connection that has not authenticated: AUTH and
   * QUIT run (their parse errors answered as always); any other line, well-formed or
   * not, gets `ERROR authentication required`, so nothing of the protocol is learnt
   * without the password.
   */
  runBeforeAuth(buf: Buffer, start: number, end: number, out: ReplyBuffer): AfterLine {
    const p = this.#parsed;
    const code = parseCommand(buf, start, end, this.#maxValueBytes, p);
    const command = p.command;
    let result = RESULT_ERROR;
    let after: AfterLine = GO_ON;
    if (command !== AUTH && command !== QUIT) {
      out.bytes(AUTHENTICATION_REQUIRED_REPLY);
      this.#metrics.protocolErrors[AUTHENTICATION_REQUIRED]!++;
    } else if (code !== OK) {
      out.bytes(PARSE_ERROR_REPLY_BYTES[code]!);
      this.#metrics.protocolErrors[reasonIndexOfParseError(code)]!++;
    } else if (command === QUIT) {
      out.bytes(BYE_REPLY);
      result = RESULT_OK;
      after = CLOSE;
    } else if (this.#checkPassword(buf, out)) {
      result = RESULT_OK;
      after = AUTHENTICATED;
    } else {
      after = AUTH_FAILED;
    }
    this.#record(command, result);
    return after;
  }

  /** The parsed AUTH's password against the store's: answers OK or `ERROR invalid password` (counted). */
  #checkPassword(buf: Buffer, out: ReplyBuffer): boolean {
    const p = this.#parsed;
    if (this.#password.matches(buf, p.valueStart, p.valueEnd)) {
      out.bytes(OK_REPLY);
      return true;
    }
    out.bytes(INVALID_PASSWORD_REPLY);
    this.#metrics.authFailures++;
    return false;
  }

  /**
   * One clock read per command: a command's time runs from the previous one's end (or
   * the batch's start) to its own end.
   */
  #record(command: number, result: number): void {
    const now = performance.now();
    this.#metrics.record(command, result, (now - this.#lastTick) / 1000);
    this.#lastTick = now;
  }
}
