// Where the record arena's pages come from (record-arena.ts). A page is an ArrayBuffer; its
// memory must leave the process when the page is freed (detached), not stay resident in a
// free list (docs/benchmarks.md#memory-under-churn). Three sources, the first that applies:
//
// - MappedPageSource: each page a mapping of its own, made by the native add-on (mmap) and
//   unmapped when the page is detached. Nothing passes through malloc and no thread is needed:
//   a page costs a system call of a few µs on the serving thread, and its memory is committed
//   as the arena writes it.
// - ThreadPageSource, without the add-on: with glibc's mmap threshold fixed below the
//   smallest page (runtime/malloc-tuning.ts) malloc maps a page on its own, unless it can
//   serve it from a free chunk of the heap first, which it does on the serving thread, whose
//   heap is full of freed chunks (line buffers, replies, Node's own). A thread of its own
//   allocates the pages instead: glibc gives it an arena of its own, where nothing else is
//   freed, so every page is mapped. A page is handed over without a copy. A round trip to
//   that thread is slow where it counts (waking it and being woken takes ~0.15 ms, up to
//   several ms on a busy 2-core machine), so a size class's page is asked for one ahead and
//   arrives while the store serves; the serving thread waits only for a size's first page.
//   The thread is a Worker: an isolate of its own, ~150 ms of start-up and ~17 MiB of RSS.
// - THIS_THREAD_PAGES: the calling thread's malloc (tests, and stores with neither).

import { performance } from 'node:perf_hooks';
import type { MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { workerThreadsModule } from '../../shared/builtins.ts';

export interface PageSource {
  /**
   * A zeroed buffer of `bytes` bytes. `again`: more of this size will be asked for (a size
   * class's pages, not a large record's), so a source may get the next one ready ahead.
   */
  alloc(bytes: number, again?: boolean): ArrayBuffer;
  /**
   * Gives the memory of `page` (one of this source's) back to the OS now and keeps it
   * usable: it reads as zeros and is committed again as it is written. True when it did;
   * absent from sources that cannot (malloc's), whose pages are freed instead.
   */
  release?(page: ArrayBuffer): boolean;
  /**
   * As release, for the OS pages wholly within bytes [from, to) of `page`: the free end of
   * a size class's last page as its records leave. True when it did; absent from sources
   * that cannot.
   */
  releaseRange?(page: ArrayBuffer, from: number, to: number): boolean;
  /** Stops whatever the source runs (nothing for the serving thread's malloc). */
  close(): Promise<void>;
}

/** Pages from the calling thread's malloc: what tests and stores without a fixed threshold use. */
export const THIS_THREAD_PAGES: PageSource = {
  alloc: (bytes) => new ArrayBuffer(bytes),
  close: async () => {},
};

/**
 * Pages mapped one by one by the native add-on's mapPage (see the top of this file); with
 * its releasePage, a page's memory can go back while its mapping stays (the arena reuses it).
 */
export class MappedPageSource implements PageSource {
  readonly #mapPage: (bytes: number) => ArrayBuffer;
  readonly release?: (page: ArrayBuffer) => boolean;
  readonly releaseRange?: (page: ArrayBuffer, from: number, to: number) => boolean;

  constructor(
    mapPage: (bytes: number) => ArrayBuffer,
    releasePage?: (page: ArrayBuffer) => number,
    releaseRange?: (page: ArrayBuffer, from: number, to: number) => number,
  ) {
    this.#mapPage = mapPage;
    if (releasePage !== undefined) this.release = (page) => releasePage(page) === 0;
    if (releaseRange !== undefined) this.releaseRange = (page, from, to) => releaseRange(page, from, to) === 0;
  }

  alloc(bytes: number): ArrayBuffer {
    return this.#mapPage(bytes);
  }

  async close(): Promise<void> {}
}

/** By default, a page that takes longer than this comes from the serving thread, and so do all after it. */
const ROUND_TRIP_LIMIT_MS = 1000;

/** The page thread's name (Linux: its comm), for `top -H`, `ps -L` and traces: Node names every worker thread "WorkerThread". */
export const PAGE_THREAD_NAME = 'kvstore-pages';

// CommonJS, evaluated as the worker's whole program: names its thread (where it can), then
// answers each size, in order, with a buffer, transferred, or with null when it cannot be
// allocated, then counts the answer and wakes the serving thread if it waits.
const WORKER_SOURCE = `
const { workerData: { port, flag, name } } = require('node:worker_threads');
try { require('node:fs').writeFileSync('/proc/thread-self/comm', name); } catch {}
port.on('message', (bytes) => {
  let page = null;
  try {
    page = new ArrayBuffer(bytes);
  } catch {}
  port.postMessage({ bytes, page }, page === null ? [] : [page]);
  Atomics.add(flag, 0, 1);
  Atomics.notify(flag, 0);
});
`;

interface Answer {
  readonly bytes: number;
  readonly page: ArrayBuffer | null;
}

export interface ThreadPageSourceOptions {
  /** Told once, why, if pages come from the calling thread from then on (not after close). */
  readonly onFallback?: (why: string) => void;
  /** How long the caller waits for a page before it falls back (default 1 s). */
  readonly roundTripLimitMs?: number;
}

/**
 * Pages allocated on a thread of their own, handed out synchronously: the caller waits for
 * a size's first page (and whenever the thread has fallen behind); the next page of a size
 * asked for again is usually there already.
 */
export class ThreadPageSource implements PageSource {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #receive: typeof receiveMessageOnPort;
  /** Answers the thread has posted (it counts them); the serving thread waits on it. */
  readonly #flag = new Int32Array(new SharedArrayBuffer(4));
  /** Answers taken off the port. */
  #taken = 0;
  /** A page received and not yet handed out, by size (one at most: see #ask's callers). */
  readonly #ahead = new Map<number, ArrayBuffer>();
  /** Sizes of pages asked for and not yet received (one at most of each). */
  readonly #asked = new Set<number>();
  /**
   * Where pages come from: the thread; this one, since the thread failed or was too slow
   * (what the fallback metric and alert read); this one, since close() while threaded.
   */
  #state: 'threaded' | 'fell-back' | 'closed' = 'threaded';
  readonly #started: Promise<void>;

  readonly #onFallback: (why: string) => void;
  readonly #roundTripLimitMs: number;

  constructor({ onFallback = () => {}, roundTripLimitMs = ROUND_TRIP_LIMIT_MS }: ThreadPageSourceOptions = {}) {
    this.#onFallback = onFallback;
    this.#roundTripLimitMs = roundTripLimitMs;
    const threads = workerThreadsModule();
    this.#receive = threads.receiveMessageOnPort;
    const { port1, port2 } = new threads.MessageChannel();
    this.#port = port1;
    this.#worker = new threads.Worker(WORKER_SOURCE, { eval: true, workerData: { port: port2, flag: this.#flag, name: PAGE_THREAD_NAME }, transferList: [port2] });
    // It only answers, so once it runs it must not keep the process alive; until then it
    // does, or a process with nothing else to wait for would end before ready() resolved.
    // An error of its own only turns it off.
    this.#worker.on('error', (err) => this.#fallBack(`its thread failed: ${err.message}`));
    this.#worker.on('exit', (code) => this.#fallBack(`its thread exited (code ${code})`));
    this.#started = new Promise((resolve) => {
      const started = (): void => {
        this.#worker.unref();
        resolve();
      };
      this.#worker.once('online', started);
      this.#worker.once('error', started);
    });
  }

  /** Resolves once the thread runs (or failed), so that the first page does not wait for its start. */
  ready(): Promise<void> {
    return this.#started;
  }

  /** Whether pages still come from the thread (false once it failed). */
  get threaded(): boolean {
    return this.#state === 'threaded';
  }

  /** Whether the thread was given up while in use (it failed, exited or was too slow): pages come from the serving thread since. */
  get fellBack(): boolean {
    return this.#state === 'fell-back';
  }

  /** Pages received ahead and not handed out yet (a page per size class in use, at most). */
  get pagesAhead(): number {
    if (this.#state === 'threaded') this.#collect(-1);
    return this.#ahead.size;
  }

  alloc(bytes: number, again = false): ArrayBuffer {
    if (this.#state !== 'threaded') return new ArrayBuffer(bytes);
    this.#collect(-1);
    const page = this.#takeAhead(bytes) ?? this.#waitFor(bytes);
    // Asked for only when none of its size is on its way or held: one of each at most.
    if (page === undefined) return new ArrayBuffer(bytes); // the thread was just given up
    if (again && !this.#asked.has(bytes) && !this.#ahead.has(bytes)) this.#ask(bytes);
    return page;
  }

  #ask(bytes: number): void {
    this.#asked.add(bytes);
    this.#port.postMessage(bytes);
  }

  #takeAhead(bytes: number): ArrayBuffer | undefined {
    const page = this.#ahead.get(bytes);
    if (page !== undefined) this.#ahead.delete(bytes);
    return page;
  }

  /** Takes every answer posted so far, without waiting; true when one was a refusal of `waited`. */
  #collect(waited: number): boolean {
    let refused = false;
    for (let reply = this.#receive(this.#port); reply !== undefined; reply = this.#receive(this.#port)) {
      this.#taken++;
      const { bytes, page } = reply.message as Answer;
      this.#asked.delete(bytes);
      // A page asked for ahead that could not be had is asked for again when it is needed.
      if (page === null) refused ||= bytes === waited;
      else this.#ahead.set(bytes, page);
    }
    return refused;
  }

  /** Asks for a page of `bytes` (unless one is on its way) and waits for it; undefined once the thread is given up. */
  #waitFor(bytes: number): ArrayBuffer | undefined {
    if (!this.#asked.has(bytes)) this.#ask(bytes);
    const deadline = performance.now() + this.#roundTripLimitMs;
    for (;;) {
      // The thread's first answer waits for it to start (tens of ms); later ones, for one round trip.
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.wait(this.#flag, 0, this.#taken, left) === 'timed-out') break;
      // As `new ArrayBuffer` would here; the thread stays, for the pages after this one.
      if (this.#collect(bytes)) throw new RangeError(`Array buffer allocation failed (${bytes} bytes)`);
      const page = this.#takeAhead(bytes);
      if (page !== undefined) return page;
    }
    // A thread that slow is given up: pages come from this one from then on.
    this.#fallBack(`a page of ${bytes} bytes took over ${this.#roundTripLimitMs} ms`);
    void this.#worker.terminate();
    return undefined;
  }

  #fallBack(why: string): void {
    if (this.#state !== 'threaded') return;
    this.#state = 'fell-back';
    this.#dropAhead();
    this.#onFallback(why);
  }

  /** Unmaps the pages held ahead: nothing will take them. */
  #dropAhead(): void {
    for (const page of this.#ahead.values()) page.transfer(0);
    this.#ahead.clear();
  }

  async close(): Promise<void> {
    if (this.#state === 'threaded') this.#state = 'closed'; // a fallback stays on the record
    this.#dropAhead();
    this.#port.close();
    await this.#worker.terminate();
  }
}
