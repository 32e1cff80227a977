import { parseArgs } from 'node:util';
import type { GlobalOptions } from '../cli-args.ts';
import type { StoreShard } from '../../config/store-list.ts';
import type { StoreTlsConnectOptions } from '../../client/client-tls.ts';
import { resolveStoreShards } from '../store-address.ts';
import { resolveCliPassword } from '../store-password.ts';
import { resolveCliTls } from '../store-tls.ts';
import { UsageError } from '../usage-error.ts';
import { MAX_KEYSPACE } from './command-encoder.ts';

export interface BenchOptions {
  readonly host: string;
  readonly port: number;
  /** Every store to drive: one, or the shards of a ring (each gets the keys the ring gives it). */
  readonly shards: readonly StoreShard[];
  readonly connections: number;
  readonly pipeline: number;
  /** Requests to measure (-n); 0 = prefill only. Undefined when a duration is given. */
  readonly requests: number | undefined;
  /** Seconds to measure (-d). */
  readonly durationSec: number | undefined;
  readonly keyspace: number;
  readonly valueSize: number;
  readonly ratio: { readonly get: number; readonly set: number };
  readonly warmupSec: number;
  readonly prefill: boolean;
  readonly threads: number;
  readonly json: boolean;
  readonly timeoutMs: number;
  readonly help: boolean;
  /** The AUTH line each connection sends first, with the store's password (as `kv` finds it); never printed. */
  readonly auth?: Uint8Array;
  /** TLS to the store (--tls, --tls-*-file, KV_STORE_TLS*), its files read once for the run. */
  readonly tls?: StoreTlsConnectOptions;
}

export const BENCH_DEFAULTS = {
  connections: 50,
  pipeline: 1,
  requests: 100_000,
  keyspace: 100_000,
  valueSize: 100,
  ratio: '9:1',
  warmupSec: 1,
  timeoutMs: 5000,
} as const;

export function benchHelp(): string {
  const d = BENCH_DEFAULTS;
  return `Usage: kv bench [options]

Load generator for the kvstack store, in the spirit of redis-benchmark: C connections,
each writing a batch of P pre-encoded commands at once and waiting for all P replies;
keys are key:<12 digits> drawn at random from the keyspace; every SET stores the same
value. Before measuring it SETs every key once (--prefill), so each GET must return a
value of exactly --value-size bytes: any other reply is counted as wrong, ERROR replies
as errors, and the exit status is 2 if any.

Options:
  -c, --connections <n>   connections (default ${d.connections})
  -P, --pipeline <n>      commands in flight per connection (default ${d.pipeline})
  -n, --requests <n>      requests to measure (default ${d.requests}; 0 = prefill only)
  -d, --duration <s>      measure for this many seconds instead of -n
  -r, --keyspace <n>      distinct keys (default ${d.keyspace})
      --value-size <b>    bytes per value (default ${d.valueSize})
      --ratio <g:s>       GET:SET mix (default ${d.ratio}; 1:0 = only GETs, 0:1 = only SETs)
      --warmup <s>        seconds of unmeasured load first (default ${d.warmupSec})
      --no-prefill        do not SET the keyspace first (GETs may then miss)
      --threads <n>       worker threads sharing the connections (default 1)
      --timeout <ms>      connect time-out, and longest wait for a reply (default ${d.timeoutMs})
      --host, --port      server (default: KV_STORE, else 127.0.0.1:8765)
                          --store / KV_STORE with a list of shards drives every shard: each gets
                          its share of the connections and the keys the ring gives it, and the
                          report shows each shard and the total
      --json              print the result as one JSON object

A progress bar is drawn on stderr when it is a terminal and the run lasts over a second.
Note: -d is a duration here, not redis-benchmark's data size (that is --value-size).
`;
}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new UsageError(`${name} ${JSON.stringify(raw)}: expected an integer from ${min} to ${max}`);
  return Number(raw);
}

function seconds(name: string, raw: string | undefined, fallback: number | undefined, min: number): number | undefined {
  if (raw === undefined) return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) < min || Number(raw) > 86_400) throw new UsageError(`${name} ${JSON.stringify(raw)}: expected seconds from ${min} to 86400`);
  return Number(raw);
}

export function parseBenchOptions(argv: readonly string[], global: GlobalOptions, env: Record<string, string | undefined>): BenchOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      allowNegative: true,
      strict: true,
      options: {
        connections: { type: 'string', short: 'c' },
        pipeline: { type: 'string', short: 'P' },
        requests: { type: 'string', short: 'n' },
        duration: { type: 'string', short: 'd' },
        keyspace: { type: 'string', short: 'r' },
        'value-size': { type: 'string' },
        ratio: { type: 'string' },
        warmup: { type: 'string' },
        prefill: { type: 'boolean' },
        threads: { type: 'string' },
        timeout: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split('\n')[0]} (see kv bench --help)`);
  }
  const help = Boolean(values.help || global.help);
  const shards = resolveStoreShards(env, { store: global.store, host: values.host ?? global.host, port: values.port ?? global.port });
  const address = { host: shards[0]!.host, port: shards[0]!.port };
  const ratioRaw = values.ratio ?? BENCH_DEFAULTS.ratio;
  const m = /^(\d+):(\d+)$/.exec(ratioRaw);
  if (!m || Number(m[1]) + Number(m[2]) === 0) throw new UsageError(`--ratio ${JSON.stringify(ratioRaw)}: expected GET:SET, e.g. 9:1`);
  if (values.requests !== undefined && values.duration !== undefined) throw new UsageError('give -n (requests) or -d (duration), not both');
  const durationSec = seconds('--duration', values.duration, undefined, 0.001);
  const connections = int('--connections', values.connections, BENCH_DEFAULTS.connections, 1, 10_000);
  const threads = int('--threads', values.threads, 1, 1, 64);
  if (threads > connections) throw new UsageError(`--threads ${threads}: cannot exceed --connections ${connections}`);
  if (shards.length > 1 && threads > 1) throw new UsageError(`--threads ${threads}: a list of shards is driven from one thread (each shard gets its share of the connections)`);
  if (shards.length > connections) throw new UsageError(`--connections ${connections}: a list of ${shards.length} shards needs at least one connection each`);
  const prefill = values.prefill ?? true;
  const requests = durationSec === undefined ? int('--requests', values.requests, BENCH_DEFAULTS.requests, 0, Number.MAX_SAFE_INTEGER) : undefined;
  if (requests === 0 && !prefill) throw new UsageError('-n 0 means prefill only, which --no-prefill turns off');
  return {
    ...address,
    shards,
    connections,
    pipeline: int('--pipeline', values.pipeline, BENCH_DEFAULTS.pipeline, 1, 10_000),
    requests,
    durationSec,
    keyspace: int('--keyspace', values.keyspace, BENCH_DEFAULTS.keyspace, 1, MAX_KEYSPACE),
    valueSize: int('--value-size', values['value-size'], BENCH_DEFAULTS.valueSize, 0, 512 * 1024 * 1024),
    ratio: { get: Number(m[1]), set: Number(m[2]) },
    warmupSec: seconds('--warmup', values.warmup, BENCH_DEFAULTS.warmupSec, 0)!,
    prefill,
    threads,
    json: Boolean(values.json || global.json),
    timeoutMs: int('--timeout', values.timeout, global.timeoutMs ?? BENCH_DEFAULTS.timeoutMs, 1, 600_000),
    help,
    ...(help ? {} : secureOptions(env, global)),
  };
}

/** The password and TLS settings `kv` takes for every command, as kv bench uses them. */
function secureOptions(env: Record<string, string | undefined>, global: GlobalOptions): { auth?: Uint8Array; tls?: StoreTlsConnectOptions } {
  const password = resolveCliPassword(env, global.passwordFile);
  const tls = resolveCliTls(env, global);
  return {
    ...(password ? { auth: Buffer.from(`AUTH ${password.reveal()}\n`, 'utf8') } : {}),
    ...(tls ? { tls: tls.connectOptions() } : {}),
  };
}
