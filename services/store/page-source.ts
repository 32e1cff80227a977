// Where the record arena's pages come from (record-arena.ts). A page is a plain
// ArrayBuffer, which Node allocates with malloc; its memory must leave the process when
// the page is freed. With glibc's mmap threshold fixed below the smallest page
// (malloc-tuning.ts) a page is mapped on its own and unmapped when freed, unless malloc can
// serve it from a free chunk of the heap first, which it does: the serving thread's heap
// is full of freed chunks (line buffers, replies, Node's own), and in the memory-churn
// test 43 MiB of pages stayed in it after every key was deleted. A thread of its own
// allocates the pages instead: glibc gives it an arena of its own, where nothing else is
// freed, so every page is mapped. A page costs one round trip to that thread (about 15 µs
// for 64 KiB, which holds some 560 records of 100-byte values); it is handed over without
// a copy, and freed (detached) on the serving thread, which unmaps it.

import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

export interface PageSource {
  /** A zeroed buffer of `bytes` bytes. */
  alloc(bytes: number): ArrayBuffer;
  /** Stops whatever the source runs (nothing for the serving thread's malloc). */
  close(): Promise<void>;
}

/** Pages from the calling thread's malloc: what tests and stores without a fixed threshold use. */
export const THIS_THREAD_PAGES: PageSource = {
  alloc: (bytes) => new ArrayBuffer(bytes),
  close: async () => {},
};

/** By default, a page that takes longer than this comes from the serving thread, and so do all after it. */
const ROUND_TRIP_LIMIT_MS = 1000;

// CommonJS, evaluated as the worker's whole program: answers each size with a buffer,
// transferred, or with null when it cannot be allocated, then wakes the waiting thread.
const WORKER_SOURCE = `
const { workerData: { port, flag } } = require('node:worker_threads');
port.on('message', (bytes) => {
  let page = null;
  try {
    page = new ArrayBuffer(bytes);
  } catch {}
  port.postMessage(page, page === null ? [] : [page]);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
`;

export interface ThreadPageSourceOptions {
  /** Told once, why, if pages come from the calling thread from then on (not after close). */
  readonly onFallback?: (why: string) => void;
  /** How long the caller waits for a page before it falls back (default 1 s). */
  readonly roundTripLimitMs?: number;
}

/** Pages allocated on a thread of their own, synchronously: the caller waits for each. */
export class ThreadPageSource implements PageSource {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  /** 0 while a page is asked for, 1 once it has been posted back. */
  readonly #flag = new Int32Array(new SharedArrayBuffer(4));
  /** Set when the thread failed or was too slow: pages come from this thread from then on. */
  #failed = false;
  readonly #started: Promise<void>;

  readonly #onFallback: (why: string) => void;
  readonly #roundTripLimitMs: number;

  constructor({ onFallback = () => {}, roundTripLimitMs = ROUND_TRIP_LIMIT_MS }: ThreadPageSourceOptions = {}) {
    this.#onFallback = onFallback;
    this.#roundTripLimitMs = roundTripLimitMs;
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { port: port2, flag: this.#flag }, transferList: [port2] });
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
    return !this.#failed;
  }

  alloc(bytes: number): ArrayBuffer {
    if (!this.#failed) {
      Atomics.store(this.#flag, 0, 0);
      this.#port.postMessage(bytes);
      // The thread's first answer waits for it to start (tens of ms); later ones, for one round trip.
      if (Atomics.wait(this.#flag, 0, 0, this.#roundTripLimitMs) !== 'timed-out') {
        const reply = receiveMessageOnPort(this.#port);
        if (reply !== undefined && reply.message instanceof ArrayBuffer && reply.message.byteLength === bytes) return reply.message;
        // As `new ArrayBuffer` would here: the thread stays, for the pages after this one.
        if (reply !== undefined && reply.message === null) throw new RangeError(`Array buffer allocation failed (${bytes} bytes)`);
      }
      // A late answer would be taken for the next page: the thread is done with.
      this.#fallBack(`a page of ${bytes} bytes took over ${this.#roundTripLimitMs} ms`);
      void this.#worker.terminate();
    }
    return new ArrayBuffer(bytes);
  }

  #fallBack(why: string): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#onFallback(why);
  }

  async close(): Promise<void> {
    this.#failed = true;
    this.#port.close();
    await this.#worker.terminate();
  }
}
