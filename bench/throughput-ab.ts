// Two builds of the store end to end: this checkout's store and another checkout's
// (--against: a `git worktree` of another commit, its add-on built by `npm ci` or
// build-native.ts), and Redis beside them unless --no-redis, each driven in turn by the C
// load generator kvload over real sockets at one pipeline depth, the order turning every
// round.
//
//   node bench/throughput-ab.ts --against <checkout> --kvload <kvload> [--depth 1]
//        [--rounds 10] [--duration 3] [--warmup 1] [--connections 50] [--keyspace 100000]
//        [--value-size 100] [--no-redis]
//
// Why: bench/store-ab.ts measures the store's own work through a stand-in socket; a
// change to how sockets are read and written (the add-on, its calls into JavaScript) shows
// only end to end, where rounds on a shared machine move by ±10%. The server's CPU per
// operation moves far less than its ops/s, and both builds meet the same neighbours when
// they alternate: the medians of the rounds' ratios resolve a change of ~2%.
//
// Prints per system the median ops/s (range) and server CPU µs per operation, and the
// medians (ranges) of the rounds' ratios of this checkout to --against and to Redis (the
// lower middle of an even count, as every bench here: harness/median.ts).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { medianWithRange } from './harness/median.ts';
import { killAll, killChildrenOnExit, kvloadRun, log } from './harness/processes.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { coresBetween, CpuTrace, type CpuSample } from './harness/process-cpu.ts';
import { redisAvailable, startRedis, startStore, type Service } from './harness/services.ts';

const USAGE =
  'Usage: node bench/throughput-ab.ts --against <checkout> --kvload <kvload> [--depth 1] [--rounds 10] [--duration 3] [--warmup 1] [--connections 50] [--keyspace 100000] [--value-size 100] [--no-redis]';

const values = parseOptions(USAGE, {
  against: { type: 'string' },
  kvload: { type: 'string' },
  depth: { type: 'string' },
  rounds: { type: 'string' },
  duration: { type: 'string' },
  warmup: { type: 'string' },
  connections: { type: 'string' },
  keyspace: { type: 'string' },
  'value-size': { type: 'string' },
  redis: { type: 'boolean', default: true },
});

function refuse(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

if (values.against === undefined) refuse('--against <checkout> is required: the other build');
if (values.kvload === undefined) refuse('--kvload <kvload> is required: a JavaScript client is the bottleneck on 2 cores');
const against = resolve(values.against);
if (!existsSync(resolve(against, 'services/store/main.ts'))) refuse(`--against=${values.against}: not a kvstack checkout (no services/store/main.ts)`);
if (!existsSync(values.kvload)) refuse(`--kvload=${values.kvload}: no such file`);
const kvload = values.kvload;
const depth = numberOption('--depth', values.depth, 1, { min: 1, integer: true });
const rounds = numberOption('--rounds', values.rounds, 10, { min: 1, integer: true });
const duration = numberOption('--duration', values.duration, 3, { min: 1, integer: true });
const warmup = numberOption('--warmup', values.warmup, 1, { min: 0, integer: true });
const connections = numberOption('--connections', values.connections, 50, { min: 1, integer: true });
const keyspace = numberOption('--keyspace', values.keyspace, 100_000, { min: 1, integer: true });
const valueSize = numberOption('--value-size', values['value-size'], 100, { min: 1, integer: true });

interface System {
  readonly name: string;
  readonly server: Service;
  readonly protocol: 'line' | 'resp';
  readonly ops: number[];
  /** Undefined for a run too short for two CPU samples. */
  readonly cpuUsPerOp: (number | undefined)[];
}

/** One measured kvload run; the server's CPU per operation over its measured window. */
async function measure(system: System): Promise<void> {
  const trace = new CpuTrace(system.server.pid);
  const args = ['-m', system.protocol, '-h', '127.0.0.1', '-p', String(system.server.port), '-c', String(connections), '-P', String(depth), '-d', String(duration), '-w', String(warmup), '-k', String(keyspace), '-v', String(valueSize), '-r', '90'];
  let samples: readonly CpuSample[] = [];
  const run = await kvloadRun(kvload, args).finally(() => (samples = trace.stop()));
  const end = performance.now();
  const cores = coresBetween(samples, end - duration * 1000, end);
  system.ops.push(run.result.opsPerSec);
  system.cpuUsPerOp.push(cores === undefined ? undefined : (cores * 1e6) / run.result.opsPerSec);
}

async function main(): Promise<void> {
  killChildrenOnExit();
  const withRedis = values.redis && redisAvailable();
  if (values.redis && !withRedis) log('redis-server is not on PATH: Redis is left out');
  const systems: System[] = [];
  const add = (name: string, server: Service, protocol: 'line' | 'resp') => systems.push({ name, server, protocol, ops: [], cpuUsPerOp: [] });
  add('this checkout', await startStore({ detached: true }), 'line');
  add(`--against ${values.against}`, await startStore({ root: against, detached: true }), 'line');
  if (withRedis) add('Redis', await startRedis({ detached: true }), 'resp');
  for (const s of systems.slice(0, 2)) if (s.server.ready?.nativeIo !== true) log(`${s.name}: the store runs without its native socket I/O (not built there?)`);
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? systems : [...systems].reverse();
    for (const system of order) await measure(system);
    log(`round ${round}/${rounds}: ${systems.map((s) => `${s.name} ${Math.round(s.ops.at(-1)!)} ops/s, ${s.cpuUsPerOp.at(-1)?.toFixed(2) ?? '–'} µs/op`).join('; ')}`);
  }
  const lines = [`pipeline depth ${depth}, ${connections} connections, ${rounds} rounds of ${duration} s (kvload, GET:SET 9:1, ${valueSize}-byte values, ${keyspace} keys)`];
  for (const s of systems) lines.push(`${s.name}: ${medianWithRange(s.ops)} ops/s, server CPU ${medianWithRange(s.cpuUsPerOp, 2)} µs/op`);
  const [self, other, redis] = systems;
  const ratios = (to: System) => {
    const ops = self!.ops.map((o, i) => o / to.ops[i]!);
    const cpu = self!.cpuUsPerOp.map((c, i) => (c === undefined || to.cpuUsPerOp[i] === undefined ? undefined : c / to.cpuUsPerOp[i]!));
    return `ops/s ${medianWithRange(ops, 3)}×, CPU per operation ${medianWithRange(cpu, 3)}×`;
  };
  lines.push(`this checkout / --against, medians of the rounds' ratios: ${ratios(other!)}`);
  if (redis !== undefined) lines.push(`this checkout / Redis, medians of the rounds' ratios: ${ratios(redis)}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().then(
  () => killAll(),
  (err: unknown) => {
    killAll();
    process.stderr.write(`throughput-ab: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
