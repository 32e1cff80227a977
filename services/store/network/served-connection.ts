// The module's binding, not the global: `globalThis.performance` is a getter that V8 looks
// up on every call (1-2% of a command at pipeline depth 16).
import { performance } from 'node:perf_hooks';
import { LineFramer, type HeldCopies, type LineSink } from '../../protocol/line-framer.ts';
import { LINE_TOO_LONG_REPLY } from '../../protocol/replies.ts';
import type { Logger } from '../../shared/logger.ts';
import { AUTH_FAILED, AUTHENTICATED, CLOSE, GO_ON, type AfterLine, type CommandRunner } from './command-runner.ts';
import { MAX_AUTH_FAILURES } from './password-check.ts';
import type { ReadSwitch } from './read-switch.ts';
import type { ClientSink, ClientSocket } from './client-socket.ts';
import { ReplyBuffer, type ReplyBufferPool } from './reply-buffer.ts';
import { COMMAND_BUDGET, LINE_TOO_LONG, REPLY_BOUND, TIME_SLICE, type StoreMetrics } from '../store-metrics.ts';
import type { TurnScheduler, TurnWork } from './turn-scheduler.ts';

/**
 * Replies a connection may have waiting in the process (built, or queued in its socket)
 * before its commands stop running; they resume once the socket has handed them to the
 * kernel. The process never holds more than this plus one reply for a connection.
 */
export const REPLY_BOUND_BYTES = 64 * 1024;
/**
 * Commands one connection runs per event-loop turn; then it yields to the others, as
 * Redis reads at most 16 KB of one client's input per event. With REPLY_BOUND_BYTES this
 * bounds what one connection can take of a turn.
 */
export const COMMANDS_PER_TURN = 256;
/**
 * And at most this long (ms) of one turn: 256 commands take ~0.2 ms once V8 has optimised
 * the command path, but many times that in the code it runs first (the first few hundred
 * ms of a load) or after a deoptimisation, and every other client waits for the turn.
 * Half of the turn's budget for pipelined work (TURN_BUDGET_MS).
 * The clock is read every CLOCK_CHECK_LINES lines, so a connection pipelining 256 keeps
 * the budget's cost to a clock read per 16 commands and one at depth 1 reads it never.
 */
export const TURN_SLICE_MS = 0.5;
export const CLOCK_CHECK_LINES = 16;
/**
 * Where the scan of a read may stop: past CLOCK_CHECK_LINES lines with two keys the read
 * is neither held (one key) nor run where it is read (a few lines): it waits in line, and
 * its lines are scanned again when they run (CommandRunner.prefetchLines), so scanning
 * the rest now would be done twice.
 */
const PIPELINE_SEEN = { lines: CLOCK_CHECK_LINES + 1, keys: 2 } as const;

// A connection's state. Whether reading is paused follows from it, from the input the
// framer holds and from the replies waiting: see #steerReading.
/** Reading and running commands. */
const OPEN = 0;
/** The client half-closed or the server is shutting down: lines already read run, then the socket ends. */
const DRAINING = 1;
/** After QUIT or `line too long`: nothing more runs; the socket ends once the replies are written. */
const CLOSING = 2;
/** socket.end() called. */
const ENDED = 3;

/** How ServedConnection.#pump was reached: a read or a drained socket, the line of waiting work, the turn's held one-command reads. */
type PumpFrom = typeof FRESH | typeof RESUMED | typeof HELD;
const FRESH = 0;
const RESUMED = 1;
const HELD = 2;

/** What a connection needs from the server: nothing of the server itself. */
export interface ConnectionContext {
  readonly maxLineBytes: number;
  /** A connection's time budget per turn (TURN_SLICE_MS; a test may set 0: a yield every CLOCK_CHECK_LINES lines). */
  readonly turnSliceMs: number;
  readonly runner: CommandRunner;
  readonly replyPool: ReplyBufferPool;
  /** Where the copies of input held past a read come from (one pool per server). */
  readonly heldCopies: HeldCopies;
  readonly turns: TurnScheduler;
  readonly metrics: Pick<StoreMetrics, 'receivedBytes' | 'sentBytes' | 'protocolErrors' | 'connectionYields'>;
  readonly logger: Logger;
}

/** What a test (or a diagnostic) can see of one connection's flow control. */
export interface ConnectionFlow {
  readonly bytesRead: number;
  /** Reply bytes handed to the socket so far (taken by the kernel or queued). */
  readonly bytesWritten: number;
  /** Reply bytes queued in the socket, not yet taken by the kernel. */
  readonly writableLength: number;
  /** Reading is paused: the replies already queued must drain, or the turn's budget is spent. */
  readonly paused: boolean;
  /** The server's idle time-out in ms; 0 = none. */
  readonly idleTimeoutMs: number;
  /** Its reads land in the server's shared buffer (else in a buffer per read, Node's way). */
  readonly sharedReads: boolean;
  /** Its reads are made by the native poller (native-io.ts), not by Node's stream. */
  readonly nativeReads: boolean;
}

/** How a connection's input is read: where it lands, by whom, and the switch that turns reading on and off. */
export interface ConnectionReads {
  readonly shared: boolean;
  readonly native: boolean;
  readonly switch: ReadSwitch;
}

/**
 * One client connection: frames lines, runs them (a read of one command at the end of the
 * turn, with the other connections' such reads: OneLineReads; a read of a few lines where
 * it is read; a read of many in line at the end of the turn: TurnScheduler), and writes each
 * turn's replies with one write. It stops running commands (and pauses reading; the
 * framer keeps the input it holds) when its unsent replies pass REPLY_BOUND_BYTES, until the
 * socket drains, or after COMMANDS_PER_TURN commands or TURN_SLICE_MS, and waits in line
 * again. So a client that pipelines without reading
 * holds the store to about one read of input and REPLY_BOUND_BYTES plus one reply of
 * output, and cannot keep the others waiting for more than one budget, nor can many such
 * clients together make a turn much longer than TURN_BUDGET_MS.
 */
export class ServedConnection implements TurnWork, LineSink, ClientSink {
  /** Its socket; another one after reopen(). */
  socket: ClientSocket;
  /** Its slot in the server's table of open connections (-1: not open). */
  tableSlot = -1;
  turnQueues = 0;
  readonly #ctx: ConnectionContext;
  readonly #framer: LineFramer;
  readonly #replies: ReplyBuffer;
  #state = OPEN;
  #budget = COMMANDS_PER_TURN;
  /** For stalledMs(): when the queued replies last shrank, and how many there were. */
  #stallSince = 0;
  #stallUnsent = 0;
  /** performance.now() of the last input read or output drained, for idleMs(). */
  #activeAt = performance.now();
  /** Input bytes received (socket.bytesRead counts only what Node's stream read). */
  #bytesRead = 0;
  /** It may run every command: it sent the password, or the store has none (SPEC §8). */
  #authenticated: boolean;
  /** Wrong passwords it sent; MAX_AUTH_FAILURES closes it. */
  #authFailures = 0;

  /** How its input is read. */
  reads: ConnectionReads;

  /** The server calls socket.serve(connection) once it is made: the connection is its socket's sink. */
  constructor(socket: ClientSocket, context: ConnectionContext, reads: ConnectionReads) {
    this.socket = socket;
    this.reads = reads;
    this.#ctx = context;
    this.#authenticated = !context.runner.passwordRequired;
    this.#replies = new ReplyBuffer(context.replyPool);
    // The connection is its framer's sink: no closures of its own per connection.
    this.#framer = new LineFramer(context.maxLineBytes, this, context.heldCopies);
  }

  /**
   * The same object serving a new connection, as if made anew: a closed connection is
   * reused (tcp-server.ts) only once no turn queue holds it (turnQueues 0), so nothing of
   * its old life can reach the new socket. Returns itself.
   */
  reopen(socket: ClientSocket, reads: ConnectionReads): this {
    this.socket = socket;
    this.reads = reads;
    this.#state = OPEN;
    this.#budget = COMMANDS_PER_TURN;
    this.#stallSince = 0;
    this.#stallUnsent = 0;
    this.#activeAt = performance.now();
    this.#bytesRead = 0;
    this.#authenticated = !this.#ctx.runner.passwordRequired;
    this.#authFailures = 0;
    this.#framer.reset();
    this.#replies.reset();
    return this;
  }

  /** The socket's sink: its queued replies are with the kernel. */
  drained(): void {
    this.#activeAt = performance.now();
    // Lines held back by the reply bound continue in line; with none, reading resumes.
    if (this.#framer.hasUnframedInput && this.#state < CLOSING) this.#waitInLine();
    else this.#steerReading();
  }

  /** The socket's sink: the client is done sending (half-close): answer everything it sent, then end. */
  inputEnded(): void {
    this.shutdown();
  }

  /** Its flow control, but for the idle time-out, which is the server's (StoreServer.connectionFlows). */
  get flow(): Omit<ConnectionFlow, 'idleTimeoutMs'> {
    const s = this.socket;
    const reads = this.reads;
    return { bytesRead: this.#bytesRead, bytesWritten: this.#replies.handedBytes, writableLength: s.writableLength, paused: reads.switch.paused, sharedReads: reads.shared, nativeReads: reads.native };
  }

  /**
   * How long, in ms of `now` (performance.now()), nothing has been read from the client nor
   * taken by it. The server's periodic sweep closes a connection idle for IDLE_TIMEOUT_MS:
   * a timer per socket (socket.setTimeout) would be re-armed on every read and every write,
   * which cost 3-7% of the store's throughput at pipeline depth 1.
   */
  idleMs(now: number): number {
    return now - this.#activeAt;
  }

  /**
   * How long, in ms of `now`, the socket has been full with none of its queued replies
   * taken by the client; 0 when it is not full. Called periodically by the server.
   */
  stalledMs(now: number): number {
    const socket = this.socket;
    // Whatever the state: a client that QUITs behind replies it never reads is stuck too.
    if (!socket.writableNeedDrain) {
      this.#stallSince = 0;
      return 0;
    }
    const unsent = socket.writableLength;
    if (this.#stallSince === 0 || unsent < this.#stallUnsent) {
      this.#stallSince = now;
      this.#stallUnsent = unsent;
      return 0;
    }
    this.#stallUnsent = unsent;
    return now - this.#stallSince;
  }

  /**
   * Graceful stop (server shutdown, or the client's FIN): lines already read are answered,
   * those held back too, then the socket ends.
   */
  shutdown(): void {
    if (this.#state !== OPEN) return;
    this.#state = DRAINING;
    this.#ctx.turns.atEndOfTurn(this);
  }

  endTurn(): void {
    const socket = this.socket;
    if (socket.destroyed) {
      this.#replies.discard();
      return;
    }
    this.#ctx.metrics.sentBytes += this.#replies.writeTo(socket);
    this.#budget = COMMANDS_PER_TURN;
    const held = this.#framer.hasUnframedInput;
    if (this.#state === CLOSING || (this.#state === DRAINING && !held)) {
      this.#finish();
      return;
    }
    // Held lines continue in a later turn; if the socket is full, 'drain' resumes them.
    if (held && this.#hasRoom()) this.#ctx.turns.waitInLine(this);
    this.#steerReading();
  }

  resumeTurn(): void {
    this.#pump(performance.now(), RESUMED);
  }

  /**
   * Input read from the socket: bytes buf[start, end), which may be reused once this returns
   * (the server reads every socket into one buffer), so what is held is copied.
   */
  receive(buf: Buffer, start: number, end: number): void {
    const n = end - start;
    this.#ctx.metrics.receivedBytes += n;
    this.#bytesRead += n;
    if (this.#state !== OPEN) {
      this.#activeAt = performance.now();
      return; // after QUIT, an over-long line or shutdown the rest is read and dropped
    }
    const runner = this.#ctx.runner;
    const keys = runner.scanRead(buf, start, end, PIPELINE_SEEN);
    const at = keys === 1 && !this.#framer.hasUnframedInput ? runner.holdRead(buf, start, end) : -1;
    if (at >= 0) {
      // A read of one command: run at the end of the turn, prefetched with the others'.
      // It is active from then (runHeldRead): no timer, so no idle sweep, runs before.
      this.#framer.append(runner.heldInput, at, at + n);
      this.#ctx.turns.runHeldAtEndOfTurn(this);
      return;
    }
    const now = performance.now();
    this.#activeAt = now;
    const lineEnds = runner.lineEnds;
    this.#framer.append(buf, start, end, lineEnds);
    // A read of many lines waits in line for the turn end, its keys not yet prefetched
    // (they are when it runs): the reads of one command held for the turn end go first.
    if (lineEnds.count > CLOCK_CHECK_LINES) {
      this.#waitInLine();
    } else {
      runner.prefetchRead(buf, keys);
      this.#pump(now, FRESH);
    }
    this.#framer.ownHeldInput();
  }

  #waitInLine(): void {
    this.#ctx.turns.waitInLine(this);
    this.#steerReading(); // it holds input: no more is read until that has run
  }

  /**
   * `now`: one clock read for all the held reads of the turn, taken after their prefetch,
   * from which the runner times their commands one after another (CommandRunner.startClock).
   */
  runHeldRead(now: number): void {
    this.#activeAt = now;
    this.#pump(now, HELD);
    // What is left of it (the reply bound was reached) is copied: the held copy is reused next turn.
    this.#framer.ownHeldInput();
  }

  /**
   * Runs held lines within the turn's budget and the reply bound; `now` is performance.now().
   * `from` (PumpFrom): lines resumed from the line of waiting work get their keys
   * prefetched first (a fresh read's were, a read of at most CLOCK_CHECK_LINES); a held
   * read's first command's time runs from the last command's end, the others' from `now`.
   */
  #pump(now: number, from: PumpFrom): void {
    if (this.#state >= CLOSING || this.socket.destroyed) return;
    if (this.#budget > 0 && this.#hasRoom()) {
      const turns = this.#ctx.turns;
      const runner = this.#ctx.runner;
      const framer = this.#framer;
      const held = from === RESUMED ? framer.heldChunk : null;
      if (held !== null) {
        runner.prefetchLines(held, framer.heldStart, framer.heldEnd);
        framer.useLineEnds(runner.lineEnds);
      }
      if (from !== HELD) runner.startClock(now);
      const sliceEndsAt = now + this.#ctx.turnSliceMs;
      let sliceSpent = false;
      // In runs of CLOCK_CHECK_LINES, reading the clock between them. A short run means the
      // framer had no more complete lines or the line handler stopped it (reply bound, QUIT).
      for (;;) {
        const run = Math.min(this.#budget, CLOCK_CHECK_LINES);
        const ran = this.#framer.deliver(run);
        this.#budget -= ran;
        if (ran < run || this.#budget === 0 || !this.#hasRoom()) break;
        if (performance.now() >= sliceEndsAt) {
          sliceSpent = true;
          this.#budget = 0; // the rest of the turn's budget too: held lines wait for a later turn
          break;
        }
      }
      if (held !== null) framer.forgetLineEnds(); // the runner's, refilled by the next read
      turns.atEndOfTurn(this);
      if (this.#framer.hasUnframedInput && this.#state < CLOSING) {
        this.#ctx.metrics.connectionYields[sliceSpent ? TIME_SLICE : this.#budget === 0 ? COMMAND_BUDGET : REPLY_BOUND]!++;
      }
    }
    this.#steerReading();
  }

  /**
   * The framer's sink: runs one line; false stops the framer when the replies reach the bound. An
   * authenticated connection (every one, with no password set) pays one boolean test
   * for the password here.
   */
  onLine(buf: Buffer, start: number, end: number): boolean {
    const runner = this.#ctx.runner;
    const after = this.#authenticated ? runner.run(buf, start, end, this.#replies) : runner.runBeforeAuth(buf, start, end, this.#replies);
    if (after !== GO_ON) return this.#afterLine(after);
    return this.#hasRoom();
  }

  /** QUIT, or an AUTH: whether the framer goes on. */
  #afterLine(after: AfterLine): boolean {
    if (after === AUTHENTICATED) {
      this.#authenticated = true;
    } else if (after === CLOSE) {
      this.#close();
      return false;
    } else if (after === AUTH_FAILED && ++this.#authFailures >= MAX_AUTH_FAILURES) {
      // Said at debug level only: a client guessing from many connections must not flood the log (kvstore_auth_failures_total counts them).
      this.#ctx.logger.debug({ remote: this.socket.remoteAddress, remotePort: this.socket.remotePort }, 'closing a connection after 3 wrong passwords');
      this.#close();
      return false;
    }
    return this.#hasRoom();
  }

  /** The framer's sink: a line longer than maxLineBytes. */
  onOverflow(): void {
    const { logger, metrics, maxLineBytes } = this.#ctx;
    metrics.protocolErrors[LINE_TOO_LONG]!++;
    logger.warn({ remote: this.socket.remoteAddress, remotePort: this.socket.remotePort, maxLineBytes }, 'line too long: closing the connection');
    this.#replies.bytes(LINE_TOO_LONG_REPLY);
    this.#close();
  }

  /** Stops running commands; the socket ends once the replies so far are written. */
  #close(): void {
    this.#state = CLOSING;
    this.#framer.stop();
    this.#ctx.turns.atEndOfTurn(this);
  }

  #hasRoom(): boolean {
    return this.#replies.length + this.socket.writableLength < REPLY_BOUND_BYTES;
  }

  /** Reads while the connection is open, holds no unframed input and has room for replies. */
  #steerReading(): void {
    if (this.#state !== OPEN) return;
    const reading = this.reads.switch;
    const read = !this.#framer.hasUnframedInput && this.#hasRoom();
    if (read) {
      if (reading.paused) reading.resume();
    } else if (!reading.paused) {
      reading.pause();
    }
  }

  /** Ends the socket after the queued replies; reading goes on (and is dropped) so the peer gets a FIN, not a reset. */
  #finish(): void {
    this.#state = ENDED;
    if (this.reads.switch.paused) this.reads.switch.resume();
    // Once the last reply is handed to the kernel, the peer has LINGER_MS to close its side.
    this.socket.end();
  }
}
