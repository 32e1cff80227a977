// The prober of bench/growth-stall.ts: a PING every millisecond on a connection of its own,
// each reply's round trip recorded with when its PING was sent, by phase.
//
// It runs on a thread of its own (a worker), so its timer does not wait for the bench's
// work, and it allocates nothing per round trip: one PING buffer written again and again,
// one read buffer the socket reads into (net's `onread`), typed arrays for the times.
// Garbage would be collected on V8's helper threads as well as the prober's own: threads
// of the bench that take a core from the server it measures, in the very round trips it
// times (docs/benchmarks.md#pauses-during-growth).
import { spawnSync } from 'node:child_process';
import { readlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { getPriority, setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { PONG_REPLY } from '../services/protocol/replies.ts';

/** A phase's round trips (ms), each with when it was sent (CLOCK_MONOTONIC ms, the clock of `perf record -k CLOCK_MONOTONIC`). */
export interface RoundTrips {
  readonly sent: number[];
  readonly rtts: number[];
}

export interface ProberOptions {
  readonly port: number;
  /** Redis: PING ends with CRLF, and its reply is RESP's. */
  readonly redis: boolean;
  /** A nice value for the prober's thread (Linux; below 0 needs root), or undefined to leave it. */
  readonly nice?: number | undefined;
  /** Put the prober's thread in SCHED_FIFO (chrt; root): check realTimeUnavailable() first. */
  readonly fifo?: boolean;
  /** Round trips made before start() resolves, in a phase of their own that the report leaves out. */
  readonly warmupPings?: number;
}

export interface ProberReport {
  readonly phases: Record<string, RoundTrips>;
  /** The nice value the prober's thread got, or 'unchanged'. */
  readonly proberNice: number | 'unchanged';
  /** The prober thread's id (Linux), for traces of the machine. */
  readonly proberTid: number | undefined;
}

/**
 * Round trips the prober makes before it reports ready and the measured phase begins: its
 * thread's start (a Node isolate loading this module) takes a few hundred ms of a core, and
 * its first round trips run in code not yet optimised, so they would time the prober.
 */
export const PROBER_WARMUP_PINGS = 500;

/** The prober thread's name in traces of the machine (Linux: its comm). */
export const PROBER_THREAD_NAME = 'kvprober';

/** The length of the server's reply to PING, for a trace to tell the prober's connection by. */
export const pongBytes = (redis: boolean): number => (redis ? '+PONG\r\n'.length : PONG_REPLY.length);

/** A round trip among a phase's longest: its time, and when its PING was sent (seconds from the phase's first). */
export interface LongRoundTrip {
  readonly ms: number;
  readonly atS: number;
}

/** The indexes of the `n` largest of `values`, largest first (the earlier first among equals). */
export function longestIndexes(values: ArrayLike<number>, n: number): number[] {
  return Array.from({ length: values.length }, (_, i) => i)
    .sort((a, b) => values[b]! - values[a]!) // stable: equals keep their order
    .slice(0, n);
}

/** The `n` longest round trips of a phase, longest first (the earlier first among equals): where in the phase the worst fell. */
export function longestRoundTrips({ sent, rtts }: RoundTrips, n: number): LongRoundTrip[] {
  return longestIndexes(rtts, n).map((i) => ({ ms: +rtts[i]!.toFixed(2), atS: +((sent[i]! - sent[0]!) / 1000).toFixed(3) }));
}

/**
 * The longest round trip of a phase sent `skipMs` or more after its first (undefined if
 * none was): its worst without its start, where a server that just took up a new kind of
 * work (its first pipelined writes, say) pays for that once.
 */
export function worstAfter({ sent, rtts }: RoundTrips, skipMs: number): number | undefined {
  let worst: number | undefined;
  for (let i = 0; i < rtts.length; i++) if (sent[i]! - sent[0]! >= skipMs && (worst === undefined || rtts[i]! > worst)) worst = rtts[i]!;
  return worst === undefined ? undefined : +worst.toFixed(2);
}

/** Why chrt cannot run a thread in the real-time class here (--prober-fifo), or undefined when it can. */
export function realTimeUnavailable(): string | undefined {
  const r = spawnSync('chrt', ['-f', '1', 'true'], { encoding: 'utf8' });
  if (r.error !== undefined) return `chrt is not on PATH (${r.error.message})`;
  if (r.status !== 0) return `chrt could not run a thread in SCHED_FIFO here (root needed): ${r.stderr.trim()}`;
  return undefined;
}

/** A prober running on its own thread; start() resolves once it has made its warm-up round trips. */
export class StallProber {
  readonly #worker: Worker;
  /** The report the thread sends when asked to stop. */
  readonly #report: Promise<ProberReport>;
  /** Rejects when the thread reports an error or ends before its report. */
  readonly #failed: Promise<never>;

  private constructor(worker: Worker) {
    this.#worker = worker;
    this.#failed = new Promise<never>((_, reject) => {
      worker.on('error', reject);
      worker.on('message', (m: { error?: string }) => m.error !== undefined && reject(new Error(`prober: ${m.error}`)));
      worker.on('exit', (code) => reject(new Error(`prober: its thread ended (exit code ${code})`)));
    });
    this.#failed.catch(() => {}); // observed by start() and stop(); a failure after the report is no one's
    this.#report = new Promise<ProberReport>((resolve) => worker.on('message', (m: { report?: ProberReport }) => m.report !== undefined && resolve(m.report)));
  }

  static async start(options: ProberOptions): Promise<StallProber> {
    const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { stallProber: { ...options, warmupPings: options.warmupPings ?? PROBER_WARMUP_PINGS } } });
    const ready = new Promise<void>((resolve) => worker.on('message', (m: { ready?: boolean }) => m.ready === true && resolve()));
    const prober = new StallProber(worker);
    try {
      await Promise.race([ready, prober.#failed]);
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    return prober;
  }

  /** Round trips from now on are recorded under `name`. */
  phase(name: string): void {
    this.#worker.postMessage({ phase: name });
  }

  /** Stops the prober and returns every phase's round trips (the warm-up's left out). */
  async stop(): Promise<ProberReport> {
    this.#worker.postMessage({ report: true });
    try {
      return await Promise.race([this.#report, this.#failed]);
    } finally {
      await this.#worker.terminate();
    }
  }
}

// ---------------------------------------------------------------- the prober's thread

/** One phase's round trips, in typed arrays that double when full. */
class TripLog {
  #sent = new Float64Array(1 << 16);
  #rtts = new Float64Array(1 << 16);
  length = 0;

  add(sent: number, rtt: number): void {
    if (this.length === this.#sent.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.#sent = grow(this.#sent);
      this.#rtts = grow(this.#rtts);
    }
    this.#sent[this.length] = sent;
    this.#rtts[this.length] = rtt;
    this.length++;
  }

  toRoundTrips(): RoundTrips {
    return { sent: Array.from(this.#sent.subarray(0, this.length)), rtts: Array.from(this.#rtts.subarray(0, this.length)) };
  }
}

/** PINGs in flight, oldest first: their send times in a ring (a minute of them at one a millisecond). */
const IN_FLIGHT = 1 << 16;

/**
 * Names the calling thread (Linux: its comm, at most 15 bytes), so that a trace of the
 * machine (--trace-steal's serverPreemptedBy) tells the prober from other threads named
 * after their kind (every Node worker thread is "WorkerThread"). Elsewhere, nothing.
 */
function nameThread(name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name);
  } catch {
    // Not Linux: the trace that reads the name is Linux-only too.
  }
}

/** The calling thread's id (Linux: a thread is a task with its own id), or undefined elsewhere. */
function threadId(): number | undefined {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
}

/**
 * Puts thread `tid` (the prober) at nice `nice`, so the round trips it records are the
 * server's delay and not its own wait for a core on a machine the loader and the server
 * keep busy. Linux only; returns the nice value it got, or undefined when it could not.
 */
function raiseThreadPriority(tid: number, nice: number): number | undefined {
  try {
    setPriority(tid, nice);
    return getPriority(tid);
  } catch {
    return undefined;
  }
}

function runProber({ port, redis, nice, fifo, warmupPings }: Required<ProberOptions>): void {
  nameThread(PROBER_THREAD_NAME);
  const tid = threadId();
  const niceGot = nice === undefined || tid === undefined ? undefined : raiseThreadPriority(tid, nice);
  // The bench checked that chrt can (realTimeUnavailable), so failing here is an error.
  if (fifo && (tid === undefined || spawnSync('chrt', ['-f', '-p', '1', String(tid)], { stdio: 'ignore' }).status !== 0)) {
    parentPort!.postMessage({ error: 'chrt could not put the prober thread in SCHED_FIFO' });
    return;
  }
  // CLOCK_MONOTONIC in ms without a BigInt per reading: performance.now() counts from the
  // thread's start on the same clock.
  const clockOffset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  const inFlight = new Float64Array(IN_FLIGHT);
  let sentCount = 0;
  let repliedCount = 0;
  const phases = new Map<string, TripLog>();
  let trips = new TripLog();
  phases.set('start', trips);
  let warming = true;
  const ping = Buffer.from(redis ? 'PING\r\n' : 'PING\n');
  let timer: NodeJS.Timeout | undefined;
  const sock = connect({
    port,
    host: '127.0.0.1',
    noDelay: true,
    onread: {
      buffer: Buffer.alloc(4096),
      callback: (n: number, buf: Uint8Array): boolean => {
        const t = performance.now() + clockOffset;
        for (let i = 0; i < n; i++) {
          if (buf[i] !== 10) continue;
          const at = inFlight[repliedCount++ & (IN_FLIGHT - 1)]!;
          trips.add(at, t - at);
          if (warming && trips.length === warmupPings) {
            warming = false;
            parentPort!.postMessage({ ready: true });
          }
        }
        return true; // keep reading
      },
    },
  });
  sock.on('connect', () => {
    timer = setInterval(() => {
      if (sentCount - repliedCount === IN_FLIGHT) {
        clearInterval(timer);
        parentPort!.postMessage({ error: `${IN_FLIGHT} PINGs without a reply` });
        return;
      }
      inFlight[sentCount++ & (IN_FLIGHT - 1)] = performance.now() + clockOffset;
      sock.write(ping);
    }, 1);
  });
  sock.on('error', (err) => parentPort!.postMessage({ error: String(err) }));
  parentPort!.on('message', (m: { phase?: string; report?: boolean }) => {
    if (m.phase !== undefined) {
      trips = new TripLog();
      phases.set(m.phase, trips);
    }
    if (m.report) {
      clearInterval(timer);
      sock.destroy();
      phases.delete('start');
      const report: ProberReport = {
        phases: Object.fromEntries([...phases].map(([name, log]) => [name, log.toRoundTrips()])),
        proberNice: niceGot ?? 'unchanged',
        proberTid: tid,
      };
      parentPort!.postMessage({ report });
    }
  });
}

if (!isMainThread && (workerData as { stallProber?: unknown } | null)?.stallProber !== undefined) {
  runProber((workerData as { stallProber: Required<ProberOptions> }).stallProber);
}
