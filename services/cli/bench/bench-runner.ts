import { Worker } from 'node:worker_threads';
import type { BenchOptions } from './bench-options.ts';
import type { BenchProtocol } from './bench-protocol.ts';
import { LatencyHistogram, type HistogramData, type LatencySummary } from './latency-histogram.ts';
import { ShardRing } from '../../ring/shard-ring.ts';
import { benchKey } from './command-encoder.ts';
import { lineProtocol } from './line-protocol.ts';
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
  /** The wire protocol's name (BenchProtocol.name): `line` for the store's. */
  readonly protocol: string;
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
  /** With a list of shards: each shard's own result (the fields above are the totals). */
  readonly shards?: readonly (BenchResult & { readonly shard: string })[];
}

export interface WorkerJob {
  /** The load options but the protocol, which the worker imports from `protocolModule`. */
  readonly load: Omit<LoadOptions, 'protocol'>;
  readonly protocolModule: string;
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

function loadOptions(o: BenchOptions, protocol: BenchProtocol, connections: number, keys?: Float64Array): LoadOptions {
  return {
    host: o.host,
    port: o.port,
    keys,
    protocol,
    connections,
    pipeline: o.pipeline,
    keyspace: o.keyspace,
    valueSize: o.valueSize,
    getFraction: o.ratio.get / (o.ratio.get + o.ratio.set),
    timeoutMs: o.timeoutMs,
    auth: o.auth,
    tls: o.tls,
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
export async function runBenchmark(o: BenchOptions, onPhase: (phase: BenchPhaseInfo) => void = () => {}, protocol: BenchProtocol = lineProtocol): Promise<BenchResult> {
  if (o.shards.length > 1) return runOverShards(o, protocol);
  return runOne(o, protocol, onPhase);
}

/** The keys of the keyspace that the ring gives each shard (key numbers, as the encoder writes them). */
function keysByShard(o: BenchOptions): Map<string, Float64Array> {
  const ring = new ShardRing(o.shards);
  const lists = new Map<string, number[]>(o.shards.map((s) => [s.name, []]));
  for (let k = 0; k < o.keyspace; k++) lists.get(ring.shardFor(benchKey(k)).name)!.push(k);
  return new Map([...lists].map(([name, keys]) => [name, Float64Array.from(keys)]));
}

/**
 * A list of shards: every shard driven at once, each with its share of the connections
 * and the keys the ring gives it (the traffic a ring-aware client sends), each reported,
 * plus the totals (requests summed; ops/s summed over the shards, which run side by side).
 */
async function runOverShards(o: BenchOptions, protocol: BenchProtocol): Promise<BenchResult> {
  // Routing every key number costs about a tenth of a microsecond each.
  if (o.keyspace > 10_000_000) throw new Error(`--keyspace ${o.keyspace}: over a list of shards, at most 10000000 keys (each is routed before the run)`);
  const keys = keysByShard(o);
  for (const [name, list] of keys) {
    if (list.length === 0) throw new Error(`--keyspace ${o.keyspace} leaves shard ${name} without keys; use a larger keyspace`);
  }
  const results = await Promise.all(
    o.shards.map(async (s, i) => {
      const mine = keys.get(s.name)!;
      const one: BenchOptions = {
        ...o,
        host: s.host,
        port: s.port,
        shards: [s],
        keyspace: mine.length,
        connections: share(o.connections, o.shards.length, i),
        requests: o.requests === undefined ? undefined : share(o.requests, o.shards.length, i),
      };
      return { shard: s.name, ...(await runOne(one, protocol, () => {}, mine)) };
    }),
  );
  const sum = (pick: (r: BenchResult) => number) => results.reduce((a, r) => a + pick(r), 0);
  const worst = (pick: (r: BenchResult) => number) => Math.max(...results.map(pick));
  const prefills = results.map((r) => r.prefill).filter((p) => p !== null);
  return {
    ...results[0]!,
    target: o.shards.map((s) => s.name).join(','),
    connections: o.connections,
    keyspace: o.keyspace,
    prefill: prefills.length
      ? { requests: sum((r) => r.prefill?.requests ?? 0), seconds: worst((r) => r.prefill?.seconds ?? 0), opsPerSec: sum((r) => r.prefill?.opsPerSec ?? 0), errors: sum((r) => r.prefill?.errors ?? 0), wrong: sum((r) => r.prefill?.wrong ?? 0) }
      : null,
    warmup: results[0]!.warmup && { requests: sum((r) => r.warmup?.requests ?? 0), seconds: worst((r) => r.warmup?.seconds ?? 0) },
    requests: sum((r) => r.requests),
    gets: sum((r) => r.gets),
    sets: sum((r) => r.sets),
    seconds: worst((r) => r.seconds),
    opsPerSec: sum((r) => r.opsPerSec),
    // Latency over the shards: the worst shard's (each shard's own is in `shards`).
    latencyMs: results.reduce((w, r) => (r.latencyMs.p99 > w.p99 ? r.latencyMs : w), results[0]!.latencyMs),
    misses: sum((r) => r.misses),
    errors: sum((r) => r.errors),
    wrongReplies: sum((r) => r.wrongReplies),
    shards: results,
  };
}

async function runOne(o: BenchOptions, protocol: BenchProtocol, onPhase: (phase: BenchPhaseInfo) => void, keys?: Float64Array): Promise<BenchResult> {
  const gen = new LoadGenerator(loadOptions(o, protocol, o.connections, keys));
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
      ({ warmup, measure } = await runInWorkers(o, protocol, onPhase));
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
    protocol: protocol.name,
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

async function runInWorkers(o: BenchOptions, protocol: BenchProtocol, onPhase: (phase: BenchPhaseInfo) => void): Promise<{ warmup: PhaseResult | null; measure: PhaseResult }> {
  const progress = new SharedArrayBuffer(8 * o.threads);
  const cells = new Float64Array(progress);
  const done = () => cells.reduce((a, b) => a + b, 0);
  const workers = Array.from({ length: o.threads }, (_, index) => {
    const { protocol: _posted, ...load } = loadOptions(o, protocol, share(o.connections, o.threads, index));
    const job: WorkerJob = {
      load,
      protocolModule: protocol.module,
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
