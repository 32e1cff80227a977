// Resident memory of a real store process under a churn of mixed value sizes, then after
// every key is deleted. Reproduces the case `MAX_MEMORY_BYTES` must bound: values of 1 B
// to 64 KiB over a keyspace several times larger than the cap, so the store keeps
// evicting, records of every size class come and go, and large records are allocated and
// freed all the time.
//
//   node bench/memory-churn.ts [--max-memory 67108864] [--max-value 65536] [--keys 20000]
//        [--ops 200000] [--sizes uniform|log] [--connections 4] [--depth 8]
//        [--sample-ms 500] [--settle-ms 5000] [--idle-ms 3000] [--built]
//        [--store-node-args '<flags>'] [--json]
//
// The store runs as a child process (ports chosen by the OS). Its memory is read from its
// own /metrics (the baseline once it has stood idle for --idle-ms, long enough for its
// idle collection and malloc trims, so that it is the idle figure the start-up bench
// reports; --built runs the compiled services, as the image does): process_resident_memory_bytes (RSS), nodejs_heap_size_used_bytes,
// nodejs_external_memory_bytes (Buffers and other memory outside the V8 heap that
// JavaScript objects hold), kvstore_usage_bytes and kvstore_memory_arena_bytes when the
// store exports it. Phases: idle (the baseline), churn (--ops commands: 80% SET, 15% GET,
// 5% DELETE on random keys), delete-all (a DELETE for every key of the keyspace), then
// --settle-ms of idleness. Prints RSS over time, the peak RSS against the cap, and RSS
// right after the delete-all and after settling.
import { randomInt } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildDist } from './harness/build-dist.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { scrape } from './harness/scrape.ts';
import { startStore } from './harness/services.ts';

const MiB = 1024 * 1024;

export interface ChurnOptions {
  readonly maxMemoryBytes: number;
  readonly maxValueBytes: number;
  readonly keys: number;
  readonly ops: number;
  /** uniform: sizes spread evenly over 1..maxValueBytes; log: evenly over their logarithm (mostly small values). */
  readonly sizes: 'uniform' | 'log';
  readonly connections: number;
  readonly depth: number;
  readonly sampleMs: number;
  readonly settleMs: number;
  /** How long the store stands idle before the baseline is taken, ms. */
  readonly idleMs: number;
  /** Run the compiled services (dist/, built first) instead of the TypeScript sources. */
  readonly built: boolean;
  /** Extra environment for the store (e.g. an eviction policy). */
  readonly env?: Record<string, string>;
  /** Extra flags for the store's node, after the image's launch flags (V8 takes the last). */
  readonly nodeArgs?: readonly string[];
  readonly log?: (line: string) => void;
}

export const defaultChurnOptions: ChurnOptions = {
  maxMemoryBytes: 64 * MiB,
  maxValueBytes: 64 * 1024,
  keys: 20_000,
  ops: 200_000,
  sizes: 'uniform',
  connections: 4,
  depth: 8,
  sampleMs: 500,
  settleMs: 5000,
  idleMs: 0,
  built: false,
};

export interface ChurnSample {
  readonly phase: 'idle' | 'churn' | 'delete' | 'settle';
  readonly atMs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  readonly usageBytes: number;
  /** kvstore_memory_arena_bytes, or null when the store does not export it. */
  readonly arenaBytes: number | null;
  readonly keys: number;
}

export interface ChurnReport {
  readonly options: Omit<ChurnOptions, 'log' | 'env'>;
  readonly samples: ChurnSample[];
  readonly baselineRssBytes: number;
  readonly peakRssBytes: number;
  readonly peakRssOverCap: number;
  /** Peak RSS minus 1.5 × cap: what the bound's baseline must cover. */
  readonly peakRssAboveOneAndHalfCapBytes: number;
  readonly rssEndOfChurnBytes: number;
  readonly rssAfterDeleteBytes: number;
  /** kvstore_memory_arena_bytes at the end of the churn and after the delete-all (null when not exported). */
  readonly arenaEndOfChurnBytes: number | null;
  readonly arenaAfterDeleteBytes: number | null;
  readonly rssAfterSettleBytes: number;
  readonly keysAfterDelete: number;
  readonly usageAfterDelete: number;
  readonly evictions: number;
  readonly opsPerSecond: number;
  readonly errors: number;
  readonly storeAlive: boolean;
}

/** A pipelining line client that counts replies and errors, nothing else. */
class ChurnConnection {
  readonly #socket: Socket;
  #waiting = 0;
  #wake: (() => void) | undefined;
  errors = 0;
  #atLineStart = true;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      for (let i = 0; i < chunk.length; i++) {
        if (this.#atLineStart && chunk[i] === 0x45 /* E of ERROR */) this.errors++;
        this.#atLineStart = chunk[i] === 0x0a;
        if (this.#atLineStart && --this.#waiting === 0) this.#wake?.();
      }
    });
  }

  static open(port: number): Promise<ChurnConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new ChurnConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Writes the commands and waits for one reply line each. */
  send(lines: Buffer[]): Promise<void> {
    this.#waiting += lines.length;
    const done = new Promise<void>((resolve) => (this.#wake = resolve));
    this.#socket.write(Buffer.concat(lines));
    return done;
  }

  close(): void {
    this.#socket.destroy();
  }
}

// Values are slices of one buffer of letters (any byte but LF would do).
const LETTERS = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789');

export async function runMemoryChurn(options: Partial<ChurnOptions> = {}): Promise<ChurnReport> {
  const o: ChurnOptions = { ...defaultChurnOptions, ...options };
  const log = o.log ?? ((line: string) => process.stderr.write(`memory-churn: ${line}\n`));
  const pool = Buffer.alloc(2 * o.maxValueBytes);
  for (let i = 0; i < pool.length; i++) pool[i] = LETTERS[randomInt(LETTERS.length)]!;
  const valueSize = (): number =>
    o.sizes === 'uniform' ? randomInt(1, o.maxValueBytes + 1) : Math.min(o.maxValueBytes, Math.max(1, Math.round(Math.exp(Math.random() * Math.log(o.maxValueBytes)))));
  const key = (i: number): string => `churn:${i}`;
  const setLine = (i: number): Buffer => {
    const n = valueSize();
    const at = randomInt(0, o.maxValueBytes);
    return Buffer.concat([Buffer.from(`SET ${key(i)} `), pool.subarray(at, at + n), Buffer.from('\n')]);
  };

  if (o.built) buildDist(process.cwd());
  const store = await startStore({ env: { MAX_MEMORY_BYTES: String(o.maxMemoryBytes), MAX_VALUE_BYTES: String(o.maxValueBytes), ...o.env }, built: o.built, nodeArgs: o.nodeArgs });
  const connections: ChurnConnection[] = [];
  const samples: ChurnSample[] = [];
  const started = performance.now();
  let phase: ChurnSample['phase'] = 'idle';
  const sample = async (): Promise<ChurnSample> => {
    const m = await scrape(store.metricsPort!);
    const s: ChurnSample = {
      phase,
      atMs: Math.round(performance.now() - started),
      rssBytes: m.get('process_resident_memory_bytes') ?? 0,
      heapUsedBytes: m.get('nodejs_heap_size_used_bytes') ?? 0,
      externalBytes: m.get('nodejs_external_memory_bytes') ?? 0,
      usageBytes: m.get('kvstore_usage_bytes') ?? 0,
      arenaBytes: m.get('kvstore_memory_arena_bytes') ?? null,
      keys: m.get('kvstore_keys') ?? 0,
    };
    samples.push(s);
    const arena = s.arenaBytes === null ? '' : `, arena ${mib(s.arenaBytes)}`;
    log(`${(s.atMs / 1000).toFixed(1).padStart(6)} s ${s.phase.padEnd(6)} rss ${mib(s.rssBytes)}, heap ${mib(s.heapUsedBytes)}, external ${mib(s.externalBytes)}, usage ${mib(s.usageBytes)}${arena}, ${s.keys} keys`);
    return s;
  };
  let sampler: NodeJS.Timeout | undefined;
  try {
    if (o.idleMs > 0) await sleep(o.idleMs);
    const baseline = await sample();
    for (let c = 0; c < o.connections; c++) connections.push(await ChurnConnection.open(store.port));
    log(`store pid ${store.child.pid}: cap ${mib(o.maxMemoryBytes)}, values 1..${o.maxValueBytes} B (${o.sizes}), ${o.keys} keys, ${o.ops} commands`);

    phase = 'churn';
    sampler = setInterval(() => void sample().catch(() => {}), o.sampleMs);
    const churnStart = performance.now();
    let issued = 0;
    await Promise.all(
      connections.map(async (conn) => {
        while (issued < o.ops && store.alive()) {
          const batch: Buffer[] = [];
          for (let d = 0; d < o.depth && issued < o.ops; d++, issued++) {
            const i = randomInt(o.keys);
            const r = randomInt(100);
            batch.push(r < 80 ? setLine(i) : Buffer.from(`${r < 95 ? 'GET' : 'DELETE'} ${key(i)}\n`));
          }
          await conn.send(batch);
        }
      }),
    );
    const churnSeconds = (performance.now() - churnStart) / 1000;
    const endOfChurn = await sample();

    phase = 'delete';
    for (let i = 0; i < o.keys; i += o.depth * o.connections) {
      await Promise.all(
        connections.map((conn, c) => {
          const batch: Buffer[] = [];
          for (let d = 0; d < o.depth; d++) {
            const k = i + c * o.depth + d;
            if (k < o.keys) batch.push(Buffer.from(`DELETE ${key(k)}\n`));
          }
          return batch.length === 0 ? undefined : conn.send(batch);
        }),
      );
    }
    const afterDelete = await sample();
    phase = 'settle';
    await new Promise((r) => setTimeout(r, o.settleMs));
    clearInterval(sampler);
    sampler = undefined;
    const afterSettle = await sample();
    const evictions = (await scrape(store.metricsPort!)).get('kvstore_evictions_total') ?? 0;

    const peak = Math.max(...samples.map((s) => s.rssBytes));
    return {
      options: { maxMemoryBytes: o.maxMemoryBytes, maxValueBytes: o.maxValueBytes, keys: o.keys, ops: o.ops, sizes: o.sizes, connections: o.connections, depth: o.depth, sampleMs: o.sampleMs, settleMs: o.settleMs, idleMs: o.idleMs, built: o.built },
      samples,
      baselineRssBytes: baseline.rssBytes,
      peakRssBytes: peak,
      peakRssOverCap: Math.round((peak / o.maxMemoryBytes) * 100) / 100,
      peakRssAboveOneAndHalfCapBytes: peak - 1.5 * o.maxMemoryBytes,
      rssEndOfChurnBytes: endOfChurn.rssBytes,
      rssAfterDeleteBytes: afterDelete.rssBytes,
      arenaEndOfChurnBytes: endOfChurn.arenaBytes,
      arenaAfterDeleteBytes: afterDelete.arenaBytes,
      rssAfterSettleBytes: afterSettle.rssBytes,
      keysAfterDelete: afterSettle.keys,
      usageAfterDelete: afterSettle.usageBytes,
      evictions,
      opsPerSecond: Math.round(o.ops / churnSeconds),
      errors: connections.reduce((n, c) => n + c.errors, 0),
      storeAlive: store.alive(),
    };
  } finally {
    if (sampler !== undefined) clearInterval(sampler);
    connections.forEach((c) => c.close());
    store.kill();
  }
}

const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;
const signedMib = (bytes: number): string => `${bytes < 0 ? '−' : '+'} ${mib(Math.abs(bytes))}`;

export function formatChurnReport(r: ChurnReport): string {
  const cap = r.options.maxMemoryBytes;
  return [
    `cap ${mib(cap)}; idle store ${mib(r.baselineRssBytes)}; ${r.opsPerSecond} commands/s, ${r.evictions} evictions, ${r.errors} error replies`,
    `peak RSS ${mib(r.peakRssBytes)} = ${r.peakRssOverCap} × cap (1.5 × cap + ${mib(r.peakRssAboveOneAndHalfCapBytes)}; 1.25 × cap + idle ${signedMib(r.peakRssBytes - 1.25 * cap - r.baselineRssBytes)})`,
    `RSS at the end of the churn ${mib(r.rssEndOfChurnBytes)}; after deleting every key ${mib(r.rssAfterDeleteBytes)}; ` +
      `${r.options.settleMs / 1000} s later ${mib(r.rssAfterSettleBytes)} (idle ${signedMib(r.rssAfterSettleBytes - r.baselineRssBytes)}; ${r.keysAfterDelete} keys, usage ${r.usageAfterDelete})`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const a = parseOptions(
    'Usage: node bench/memory-churn.ts [--max-memory B] [--max-value B] [--keys N] [--ops N] [--sizes uniform|log] ' +
      '[--connections N] [--depth N] [--sample-ms MS] [--settle-ms MS] [--idle-ms MS] [--built] [--policy lru|noeviction] [--store-node-args FLAGS] [--json]',
    {
      'max-memory': { type: 'string' },
      'max-value': { type: 'string' },
      keys: { type: 'string' },
      ops: { type: 'string' },
      sizes: { type: 'string' },
      connections: { type: 'string' },
      depth: { type: 'string' },
      'sample-ms': { type: 'string' },
      'settle-ms': { type: 'string' },
      'idle-ms': { type: 'string' },
      built: { type: 'boolean', default: false },
      policy: { type: 'string' },
      'store-node-args': { type: 'string', default: '' },
      json: { type: 'boolean', default: false },
    },
  );
  const int = (name: string, text: string | undefined, fallback: number): number => numberOption(`--${name}`, text, fallback, { integer: true });
  const d = defaultChurnOptions;
  const sizes = a.sizes ?? d.sizes;
  if (sizes !== 'uniform' && sizes !== 'log') {
    console.error(`--sizes must be uniform or log, got ${JSON.stringify(sizes)}`);
    process.exit(2);
  }
  const report = await runMemoryChurn({
    maxMemoryBytes: int('max-memory', a['max-memory'], d.maxMemoryBytes),
    maxValueBytes: int('max-value', a['max-value'], d.maxValueBytes),
    keys: int('keys', a.keys, d.keys),
    ops: int('ops', a.ops, d.ops),
    sizes,
    connections: Math.max(1, int('connections', a.connections, d.connections)),
    depth: Math.max(1, int('depth', a.depth, d.depth)),
    sampleMs: Math.max(50, int('sample-ms', a['sample-ms'], d.sampleMs)),
    settleMs: int('settle-ms', a['settle-ms'], d.settleMs),
    idleMs: int('idle-ms', a['idle-ms'], 3000),
    built: a.built ?? false,
    env: a.policy === undefined ? {} : { EVICTION_POLICY: a.policy },
    nodeArgs: (a['store-node-args'] ?? '').split(' ').filter(Boolean),
  });
  console.log(a.json ? JSON.stringify(report) : formatChurnReport(report));
}
