import { performance } from 'node:perf_hooks';
import { TurnEnd } from '../../shared/turn-batcher.ts';

/**
 * The time (ms) a turn of the event loop gives pipelined work. Reads of many lines do not
 * run where they are read (the poll phase): they wait in line, in the order they came, and
 * a turn end runs the line from its head while this lasts; one that starts runs its own
 * slice (256 commands or 0.5 ms, served-connection.ts), so a turn's pipelined work stays
 * within about 1.5 ms however many clients pipeline at once, and the rest wait for the
 * next turns. Without it a turn grows with their number (to tens of ms with hundreds of
 * clients flooding), and every other client waits for it. 1 ms rather than 2: a PING's p99
 * under 16 loaders is lower and pipelined throughput the same
 * (docs/benchmarks.md#connection-floods-and-fairness).
 */
export const TURN_BUDGET_MS = 1;

/** What a connection does at the turns of the event loop. */
export interface TurnWork {
  /** Owned by the TurnScheduler: which of its lists the work is in (so each holds it once). */
  turnQueues: number;
  /** At the end of the turn it had work in: write the replies built during it. */
  endTurn(): void;
  /** At the end of the turn it read in, with the other held reads: run the read it held (CommandRunner.holdRead); `now` is what HeldReadsHooks.before() returned. */
  runHeldRead(now: number): void;
  /** Its place in line came (TurnScheduler.waitInLine): run the lines it holds. */
  resumeTurn(): void;
}

/** What is done around the held reads of a turn (the command runner's prefetch and the release of their copies). */
export interface HeldReadsHooks {
  /** Before the first one runs; returns performance.now() once it is done, the time they start at. */
  before(): number;
  /** After the last one ran. */
  after(): void;
}

const ENDING = 1;
const WAITING = 2;
const HOLDING = 4;

/**
 * Work waiting for a turn end, in the order it was added, each at most once (its bit in
 * turnQueues says it is queued). A ring kept from turn to turn that grows by doubling, so
 * a turn makes no garbage (a fresh array each turn, grown push by push, was a third of the
 * store's garbage at pipeline depth 1). The line of waiting work runs from its head while
 * the turn's budget lasts, and what it does not reach keeps its place.
 */
class WorkQueue {
  readonly #flag: number;
  #ring: (TurnWork | undefined)[] = new Array<TurnWork | undefined>(16);
  #head = 0;
  #length = 0;

  constructor(flag: number) {
    this.#flag = flag;
  }

  get length(): number {
    return this.#length;
  }

  add(work: TurnWork): void {
    if ((work.turnQueues & this.#flag) !== 0) return;
    work.turnQueues |= this.#flag;
    if (this.#length === this.#ring.length) this.#grow();
    this.#ring[(this.#head + this.#length) & (this.#ring.length - 1)] = work;
    this.#length++;
  }

  /**
   * Calls `run` on up to `n` of the queued work from the head (default: what is queued now,
   * so work added meanwhile waits for the next call), each taken off first; `more()`, when
   * given, is asked before each but the first. Returns how many ran.
   */
  runFirst(run: (work: TurnWork) => void, n = this.#length, more?: () => boolean): number {
    let i = 0;
    for (; i < n && this.#length > 0; i++) {
      if (i > 0 && more !== undefined && !more()) break;
      const ring = this.#ring;
      const work = ring[this.#head]!;
      ring[this.#head] = undefined; // no closed connection stays reachable from here
      this.#head = (this.#head + 1) & (ring.length - 1);
      this.#length--;
      work.turnQueues &= ~this.#flag;
      run(work);
    }
    return i;
  }

  #grow(): void {
    const old = this.#ring;
    const ring = new Array<TurnWork | undefined>(old.length * 2);
    for (let i = 0; i < this.#length; i++) ring[i] = old[(this.#head + i) & (old.length - 1)];
    this.#ring = ring;
    this.#head = 0;
  }
}

/**
 * Gives connections hooks on the event loop: the end of the current turn (TurnEnd:
 * setImmediate runs after the poll phase has read every ready socket, so replies go out
 * together, as Redis writes in beforeSleep, and a client with many connections is woken
 * once, not per reply), and the line of pipelined work.
 *
 * A turn end runs, in order: the reads of one command that connections held for it,
 * together, between HeldReadsHooks' before() and after() (OneLineReads); the writes of
 * every reply of the turn so far; and the line of waiting work from its head, each writing
 * its replies as soon as it has run, within the turn's budget. So a client that sends one
 * command at a time waits for at most the rest of the turn it sent in, never for the
 * pipelined work read with it: a PING's p99 under loaders is lower than when pipelined
 * reads run in the poll phase, before the PINGs held for the turn end
 * (docs/benchmarks.md#connection-floods-and-fairness).
 *
 * It keeps its own lists rather than a TurnBatcher each: with a batcher each, two
 * setImmediates could fall in one check phase in either order, and a connection that ended
 * its turn in the first could resume in the second, before the next poll phase has read
 * the others.
 */
export class TurnScheduler {
  readonly #ending = new WorkQueue(ENDING);
  readonly #waiting = new WorkQueue(WAITING);
  readonly #holding = new WorkQueue(HOLDING);
  readonly #heldReads: HeldReadsHooks;
  readonly #budgetMs: number;
  readonly #leftWaiting: (n: number) => void;
  readonly #turnEnd = new TurnEnd(() => this.#run());
  /** The held reads' start time, for #runHeld. */
  #heldNow = 0;
  /** performance.now() when the line began to run at this turn end. */
  #lineStartedAt = 0;
  // Made once: a closure per turn would be garbage per turn.
  // Each connection from the line writes its replies as soon as it has run, so the budget
  // counts the writes too: they cost as much as the commands when the replies are large
  // (200 clients flooding GETs of a 1 KB value without reading: turns of 10-11 ms, mostly
  // the kernel copying replies that were written after the line had used its 2 ms).
  readonly #resume = (w: TurnWork): void => {
    w.resumeTurn(); // it joins #ending
    this.#ending.runFirst(this.#end);
  };
  readonly #runHeld = (w: TurnWork): void => w.runHeldRead(this.#heldNow); // it joins #ending
  readonly #end = (w: TurnWork): void => w.endTurn(); // may wait in line again: for the next turn end
  readonly #budgetLeft = (): boolean => performance.now() - this.#lineStartedAt < this.#budgetMs;

  /**
   * `budgetMs`: the turn's time for pipelined work (TURN_BUDGET_MS; a test may set 0: one
   * connection's slice a turn). `leftWaiting(n)`: after a turn end whose budget ran out
   * before the end of the line, how many it left waiting (a metric).
   */
  constructor(heldReads: HeldReadsHooks, budgetMs = TURN_BUDGET_MS, leftWaiting: (n: number) => void = () => {}) {
    this.#heldReads = heldReads;
    this.#budgetMs = budgetMs;
    this.#leftWaiting = leftWaiting;
  }

  #run(): void {
    // Only what waited before this turn end: what its writes put in line waits for the next.
    const waiting = this.#waiting.length;
    if (this.#holding.length > 0) {
      this.#heldNow = this.#heldReads.before();
      this.#holding.runFirst(this.#runHeld);
      this.#heldReads.after();
    }
    if (this.#ending.length > 0) this.#ending.runFirst(this.#end);
    if (waiting > 0) {
      // From the head: the first whatever the budget, so every turn moves the line on.
      this.#lineStartedAt = performance.now();
      const ran = this.#waiting.runFirst(this.#resume, waiting, this.#budgetLeft);
      if (ran < waiting) this.#leftWaiting(waiting - ran);
    }
    if (this.#waiting.length > 0) this.#turnEnd.request();
  }

  atEndOfTurn(work: TurnWork): void {
    this.#ending.add(work);
    this.#turnEnd.request();
  }

  /** At the end of this turn, with the other held reads (before any connection's replies are written). */
  runHeldAtEndOfTurn(work: TurnWork): void {
    this.#holding.add(work);
    this.#turnEnd.request();
  }

  /**
   * In line, behind the work already waiting: its turn comes at this turn's end when it is
   * put in line before it (in the poll phase), at the next one's when put in line at one.
   */
  waitInLine(work: TurnWork): void {
    this.#waiting.add(work);
    this.#turnEnd.request();
  }
}
