import { Worker } from 'node:worker_threads';
import type { BenchOptions } from './bench-options.ts';
import { LatencyHistogram, type HistogramData, type LatencySummary } from './latency-histogram.ts';
import { LoadGenerator, type LoadOptions, type PhaseResult } from './load-generator.ts';

export type BenchPhaseName = 'connect' | 'prefill' | 'warmup' | 'measure';

export interface BenchPhaseInfo {
  readonly name: BenchPhaseName;
  /** Requests the phase will send, when known. */
  readonly requests?: number;
  readonly seconds?: number;
  /** Replies received so far in this phase. */
  readonly done: () => number;
}

export interface BenchResult {
  readonly target: string;
  readonly protocol: 'line' | 'resp';
  readonly connections: number;
  readonly pipeline: number;
  readonly threads: number;
  readonly keyspace: number;
  readonly valueSize: number;
  readonly ratio: string;
  readonly prefill: { readonly requests: number; readonly seconds: number; readonly opsPerSec: number; readonly errors: number; readonly wrong: number } | null;
  readonly warmup: { readonly requests: number; readonly seconds: number } | null;
  readonly requests: number;
  readonly gets: number;
  readonly sets: number;
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly latencyMs: LatencySummary;
  readonly misses: number;
  readonly errors: number;
  readonly wrongReplies: number;
}

export interface WorkerJob {
  readonly load: LoadOptions;
  readonly requests: number | undefined;
  readonly durationSec: number | undefined;
  readonly warmupSec: number;
  readonly progress: SharedArrayBuffer;
  readonly index: number;
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'phase'; name: BenchPhaseName }
  | { type: 'result'; warmup: PhaseResult | null; measure: Omit<PhaseResult, 'histogram'> & { histogram: HistogramData } }
  | { type: 'error'; message: string };

function loadOptions(o: BenchOptions, connections: number): LoadOptions {
  return {
    host: o.host,
    port: o.port,
    protocol: o.protocol,
    connections,
    pipeline: o.pipeline,
    keyspace: o.keyspace,
    valueSize: o.valueSize,
    getFraction: o.ratio.get / (o.ratio.get + o.ratio.set),
    timeoutMs: o.timeoutMs,
  };
}

/** Splits `total` into `parts` integers that differ by at most one. */
function share(total: number, parts: number, i: number): number {
  return Math.floor(total / parts) + (i < total % parts ? 1 : 0);
}

const seconds = (r: { startedAt: number; endedAt: number }) => Math.max(1e-9, (r.endedAt - r.startedAt) / 1000);

/**
 * Runs a whole benchmark: connect, prefill, warm-up, measure; in this thread, or in
 * `threads` worker threads that share the connections (the prefill always runs here).
 */
export async function runBenchmark(o: BenchOptions, onPhase: (phase: BenchPhaseInfo) => void = () => {}): Promise<BenchResult> {
  const gen = new LoadGenerator(loadOptions(o, o.connections));
  let prefill: PhaseResult | null = null;
  let warmup: PhaseResult | null = null;
  let measure: PhaseResult;
  try {
    onPhase({ name: 'connect', done: () => 0 });
    await gen.connect();
    if (o.prefill) {
      onPhase({ name: 'prefill', requests: o.keyspace, done: () => gen.completed });
      prefill = await gen.prefill();
    }
    if (o.requests === 0) {
      measure = { requests: 0, gets: 0, sets: 0, misses: 0, errors: 0, wrong: 0, startedAt: 0, endedAt: 0, histogram: new LatencyHistogram() };
    } else if (o.threads > 1) {
      gen.close();
      ({ warmup, measure } = await runInWorkers(o, onPhase));
    } else {
      if (o.warmupSec > 0) {
        onPhase({ name: 'warmup', seconds: o.warmupSec, done: () => gen.completed });
        warmup = await gen.load({ seconds: o.warmupSec, record: false });
      }
      onPhase({ name: 'measure', requests: o.requests, seconds: o.durationSec, done: () => gen.completed });
      measure = await gen.load({ requests: o.requests, seconds: o.durationSec, record: true });
    }
  } finally {
    gen.close();
  }
  const elapsed = measure.requests ? seconds(measure) : 0;
  return {
    target: `${o.host}:${o.port}`,
    protocol: o.protocol,
    connections: o.connections,
    pipeline: o.pipeline,
    threads: o.threads,
    keyspace: o.keyspace,
    valueSize: o.valueSize,
    ratio: `${o.ratio.get}:${o.ratio.set}`,
    prefill: prefill && {
      requests: prefill.requests,
      seconds: round(seconds(prefill), 3),
      opsPerSec: Math.round(prefill.requests / seconds(prefill)),
      errors: prefill.errors,
      wrong: prefill.wrong,
    },
    warmup: warmup && { requests: warmup.requests, seconds: round(seconds(warmup), 3) },
    requests: measure.requests,
    gets: measure.gets,
    sets: measure.sets,
    seconds: round(elapsed, 3),
    opsPerSec: elapsed ? Math.round(measure.requests / elapsed) : 0,
    latencyMs: measure.histogram!.summary(),
    // A miss is only expected when the keyspace was not prefilled.
    misses: measure.misses,
    errors: measure.errors + (prefill?.errors ?? 0),
    wrongReplies: measure.wrong + (prefill?.wrong ?? 0) + (o.prefill ? measure.misses : 0),
  };
}

function round(n: number, digits: number): number {
  return Math.round(n * 10 ** digits) / 10 ** digits;
}

async function runInWorkers(o: BenchOptions, onPhase: (phase: BenchPhaseInfo) => void): Promise<{ warmup: PhaseResult | null; measure: PhaseResult }> {
  const progress = new SharedArrayBuffer(8 * o.threads);
  const cells = new Float64Array(progress);
  const done = () => cells.reduce((a, b) => a + b, 0);
  const workers = Array.from({ length: o.threads }, (_, index) => {
    const job: WorkerJob = {
      load: loadOptions(o, share(o.connections, o.threads, index)),
      requests: o.requests === undefined ? undefined : share(o.requests, o.threads, index),
      durationSec: o.durationSec,
      warmupSec: o.warmupSec,
      progress,
      index,
    };
    // The same extension as this module: .ts from the sources, .js once compiled to dist/.
    const script = new URL(`./bench-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`, import.meta.url);
    return new Worker(script, { workerData: job });
  });
  const phases = new Map<Worker, BenchPhaseName>();
  let announced: BenchPhaseName | undefined;
  const onPhaseMessage = (w: Worker, name: BenchPhaseName) => {
    phases.set(w, name);
    // Announce a phase once every worker has reached it.
    if (name !== announced && phases.size === workers.length && [...phases.values()].every((p) => p === name)) {
      announced = name;
      cells.fill(0);
      onPhase({ name, requests: name === 'measure' ? o.requests : undefined, seconds: name === 'measure' ? o.durationSec : o.warmupSec, done });
    }
  };
  try {
    const ready: Promise<void>[] = [];
    const results = workers.map((w) => {
      let readyResolve!: () => void;
      const result = new Promise<Extract<WorkerMessage, { type: 'result' }>>((resolve, reject) => {
        ready.push(
          new Promise<void>((resolveReady, rejectReady) => {
            readyResolve = resolveReady;
            const fail = (err: Error) => {
              rejectReady(err);
              reject(err);
            };
            w.on('error', fail);
            w.on('exit', (code) => fail(new Error(`bench worker exited with code ${code}`)));
            w.on('message', (m: WorkerMessage) => {
              if (m.type === 'ready') readyResolve();
              else if (m.type === 'phase') onPhaseMessage(w, m.name);
              else if (m.type === 'result') resolve(m);
              else fail(new Error(m.message));
            });
          }),
        );
      });
      result.catch(() => {}); // awaited below; a failure before that must not be unhandled
      return result;
    });
    // Start together: every worker connects first, then all get the go.
    await Promise.all(ready);
    for (const w of workers) w.postMessage('go');
    const all = await Promise.all(results);
    const histogram = new LatencyHistogram();
    for (const r of all) histogram.merge(LatencyHistogram.fromData(r.measure.histogram));
    const sum = (pick: (r: Omit<PhaseResult, 'histogram'>) => number) => all.reduce((a, r) => a + pick(r.measure), 0);
    const warmups = all.map((r) => r.warmup).filter((w): w is PhaseResult => w !== null);
    return {
      warmup: warmups.length
        ? { ...warmups[0]!, requests: warmups.reduce((a, w) => a + w.requests, 0), startedAt: Math.min(...warmups.map((w) => w.startedAt)), endedAt: Math.max(...warmups.map((w) => w.endedAt)) }
        : null,
      measure: {
        requests: sum((r) => r.requests),
        gets: sum((r) => r.gets),
        sets: sum((r) => r.sets),
        misses: sum((r) => r.misses),
        errors: sum((r) => r.errors),
        wrong: sum((r) => r.wrong),
        startedAt: Math.min(...all.map((r) => r.measure.startedAt)),
        endedAt: Math.max(...all.map((r) => r.measure.endedAt)),
        histogram,
      },
    };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
