// The options of `npm run bench`, parsed once from argv and the BENCH_* environment.
import { numberOption, parseOptions } from './harness/options.ts';

export const HELP = `Usage: npm run bench -- [options]

  --duration <s>       seconds per measured run (default 3; env BENCH_DURATION)
  --rounds <n>         store runs per depth, kvstack and Redis interleaved; medians are
                       reported (default 9; env BENCH_ROUNDS)
  --warmup <s>         unmeasured seconds before each run (default 1; env BENCH_WARMUP)
  --connections <n>    connections (default 50)
  --keyspace <n>       keys (default 100000)
  --value-size <b>     bytes per value (default 100)
  --memory-keys <n>    keys loaded for the memory test (default 1000000; env BENCH_MEMORY_KEYS; 0 skips it)
  --threads <n>        kv bench worker threads (default 1)
  --kvload <path>      drive the store rounds with this build of the C load generator kvload
                       instead of kv bench (a JavaScript client saturates its own core on a
                       2-core machine); env BENCH_KVLOAD
  --quick              2 s runs, 0.5 s warm-up, 100000 keys for memory (env BENCH_QUICK=1)
  --no-redis           skip Redis even when redis-server is on PATH
  --no-http            skip the HTTP benchmark (bench/http-bench.ts, wrk or autocannon)
  --json <file>        also write the results as JSON (e.g. bench-results/latest.json)
`;

/** The store of the throughput and memory runs: room for every key, its ports chosen by the OS. */
export const STORE_ENV = { STORE_PORT: '0', STORE_METRICS_PORT: '0', MAX_MEMORY_BYTES: String(8 * 1024 ** 3), LOG_LEVEL: 'info' };

export interface Settings {
  readonly duration: number;
  readonly rounds: number;
  readonly warmup: number;
  readonly connections: number;
  readonly keyspace: number;
  readonly valueSize: number;
  readonly memoryKeys: number;
  readonly threads: number;
  /** A kvload binary for the store rounds; kv bench when undefined. */
  readonly kvload: string | undefined;
  readonly redis: boolean;
  readonly http: boolean;
  readonly jsonFile: string | undefined;
}

export function settings(): Settings {
  const values = parseOptions(HELP, {
    duration: { type: 'string' },
    rounds: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    keyspace: { type: 'string' },
    'value-size': { type: 'string' },
    'memory-keys': { type: 'string' },
    threads: { type: 'string' },
    kvload: { type: 'string' },
    quick: { type: 'boolean' },
    redis: { type: 'boolean' },
    http: { type: 'boolean' },
    json: { type: 'string' },
  });
  const env = process.env;
  const quick = values.quick ?? env.BENCH_QUICK === '1';
  return {
    // Many short rounds rather than a few long ones: a shared machine's noise comes in
    // stretches of seconds, which a longer run does not average away
    // (docs/benchmarks.md#throughput-against-redis).
    duration: numberOption('--duration', values.duration ?? env.BENCH_DURATION, quick ? 2 : 3),
    rounds: Math.max(1, Math.round(numberOption('--rounds', values.rounds ?? env.BENCH_ROUNDS, quick ? 1 : 9))),
    warmup: numberOption('--warmup', values.warmup ?? env.BENCH_WARMUP, quick ? 0.5 : 1),
    connections: numberOption('--connections', values.connections, 50),
    keyspace: numberOption('--keyspace', values.keyspace, 100_000),
    valueSize: numberOption('--value-size', values['value-size'], 100),
    memoryKeys: numberOption('--memory-keys', values['memory-keys'] ?? env.BENCH_MEMORY_KEYS, quick ? 100_000 : 1_000_000),
    threads: numberOption('--threads', values.threads, 1),
    kvload: values.kvload ?? (env.BENCH_KVLOAD || undefined),
    redis: values.redis ?? true,
    http: values.http ?? true,
    jsonFile: values.json,
  };
}
