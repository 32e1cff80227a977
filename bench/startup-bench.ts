// Start-up against Redis: the time from a process's spawn to its first PING answered, for
// an empty store and for one that loads a snapshot of N keys (default 1,000,000 and
// 4,000,000 of 100 bytes; Redis loads an RDB of the same keys), and the idle resident
// memory of the empty store, of the backend in front of it, and of an empty Redis. Rounds
// alternate the two systems; medians and ranges are reported, with the store's own account
// of where its start-up went (its ready line's `startup`).
//
// The files are written once per size, before the rounds: kvstack's snapshot at a store's
// SIGTERM, Redis's RDB by SAVE, both after the same keys were written (by kvload's prefill
// with --kvload, else by kv bench). The store is started with a snapshot interval so long
// that none comes, so it keeps the file it loaded; every start is ended with SIGKILL, so
// neither system writes at exit. Before the rounds one start of the store is not timed: it
// fills Node's compile cache, as any earlier start of the same build on the machine has.
//
// --against <checkout> adds the store of another checkout (its add-on built) to the rounds,
// with the same files: a change's start-up against the build before it. --built runs the
// compiled JavaScript (npm run build's dist/, built first), as the image does, instead of the
// TypeScript sources `npm start` runs.
//
//   node bench/startup-bench.ts [--keys 1000000,4000000] [--value-size 100] [--rounds 3] [--idle-ms 2000] [--kvload <path>] [--against <checkout>] [--built] [--no-redis]
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { rssOf } from './harness/proc.ts';
import { median } from './harness/median.ts';
import { buildDist } from './harness/build-dist.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { killChildrenOnExit, kvBench, kvloadFill } from './harness/processes.ts';
import { redisAvailable, startBackend, startRedis, startStore, type Service } from './harness/services.ts';
import { redisCommand } from './redis/redis-command.ts';

const USAGE =
  'Usage: node bench/startup-bench.ts [--keys 1000000,4000000] [--value-size 100] [--rounds 3] [--idle-ms 2000] [--kvload <path>] [--against <checkout>] [--built] [--no-redis]';
const values = parseOptions(USAGE, {
  keys: { type: 'string' },
  'value-size': { type: 'string' },
  rounds: { type: 'string' },
  'idle-ms': { type: 'string' },
  kvload: { type: 'string' },
  against: { type: 'string' },
  built: { type: 'boolean', default: false },
  redis: { type: 'boolean', default: true },
});
const sizes = (values.keys ?? '1000000,4000000')
  .split(',')
  .filter((k) => k !== '')
  .map((k) => numberOption('--keys', k, 0, { min: 1, integer: true }));
const valueSize = numberOption('--value-size', values['value-size'], 100, { min: 1, integer: true });
const rounds = numberOption('--rounds', values.rounds, 3, { min: 1, integer: true });
const idleMs = numberOption('--idle-ms', values['idle-ms'], 2000, { integer: true });
const withRedis = values.redis && redisAvailable();
const log = (text: string) => process.stderr.write(`startup-bench: ${text}\n`);
killChildrenOnExit();

/** This checkout's store, Redis, and the store of the checkout --against names. */
type System = 'kvstack' | 'redis' | 'against';
interface Start {
  /** Spawn to the first PING answered. */
  readonly servingMs: number;
  readonly keys: number;
  /** Resident memory once it has served and sat idle for --idle-ms (empty starts only). */
  readonly rssBytes?: number;
  /** The backend's, in front of the empty store. */
  readonly backendRssBytes?: number;
  /** The store's ready line's account of its start-up (absent from a build without it). */
  readonly startup?: Record<string, number>;
}

/** One line-protocol PING on a fresh connection. */
function linePing(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true }, () => socket.write('PING\n'));
    socket.once('data', (reply) => {
      socket.destroy();
      resolve(reply.toString().trim());
    });
    socket.once('error', reject);
  });
}

const LONG = 600_000;
/** A snapshot interval no round lasts, so the store keeps the file it loaded (with 0 it consumes it). */
const NO_PERIODIC_SAVE_S = '86400';

function storeEnv(snapshot: string | undefined): Record<string, string> {
  const env: Record<string, string> = { MAX_MEMORY_BYTES: String(8 * 1024 ** 3) };
  if (snapshot) Object.assign(env, { STORE_SNAPSHOT_PATH: snapshot, STORE_SNAPSHOT_INTERVAL_S: NO_PERIODIC_SAVE_S });
  return env;
}

async function startKvstack(snapshot: string | undefined, idle: boolean, root?: string): Promise<Start> {
  const t0 = performance.now();
  const store = await startStore({ env: storeEnv(snapshot), timeoutMs: LONG, detached: true, root, built: values.built });
  try {
    const reply = await linePing(store.port);
    const servingMs = performance.now() - t0;
    if (reply !== 'PONG') throw new Error(`the store answered PING with ${reply}`);
    const start = { servingMs, keys: store.ready!.keys as number, startup: store.ready!.startup as Record<string, number> | undefined };
    if (!idle) return start;
    const backend = await startBackend({ env: { KV_STORE: `127.0.0.1:${store.port}` }, timeoutMs: LONG, detached: true, root, built: values.built });
    try {
      await sleep(idleMs);
      return { ...start, rssBytes: rssOf(store.pid), backendRssBytes: rssOf(backend.pid) };
    } finally {
      backend.kill();
      await backend.exited;
    }
  } finally {
    store.kill();
    await store.exited;
  }
}

async function startRedisWith(dir: string | undefined, idle: boolean): Promise<Start> {
  const t0 = performance.now();
  const args = dir ? ['--dir', dir, '--dbfilename', 'dump.rdb', '--save', '', '--appendonly', 'no'] : undefined;
  const redis = await startRedis({ args, timeoutMs: LONG, detached: true });
  try {
    const reply = await redisCommand(redis.port, 'PING');
    const servingMs = performance.now() - t0;
    if (!reply.startsWith('+PONG')) throw new Error(`Redis answered PING with ${reply}`);
    const keys = Number((await redisCommand(redis.port, 'DBSIZE')).slice(1));
    if (!idle) return { servingMs, keys };
    await sleep(idleMs);
    return { servingMs, keys, rssBytes: rssOf(redis.pid) };
  } finally {
    redis.kill();
    await redis.exited;
  }
}

/** Every key of the keyspace written once, the same keys into either system. */
async function fill(server: Service, keys: number, protocol: 'line' | 'resp'): Promise<void> {
  if (values.kvload !== undefined) {
    const args = ['-m', protocol, '-p', String(server.port), '-c', '2', '-P', '256', '-k', String(keys), '-v', String(valueSize)];
    const { command, errors } = await kvloadFill(values.kvload, args);
    if (errors > 0) throw new Error(`${errors} error replies in: ${command}`);
    return;
  }
  await kvBench(['--host', '127.0.0.1', '--port', String(server.port), '-n', '0', '-r', String(keys), '--value-size', String(valueSize), '-c', '50'], protocol);
}

/** A kvstack snapshot of `keys` keys in `dir`: written by a store at SIGTERM. */
async function writeSnapshot(dir: string, keys: number): Promise<string> {
  const path = join(dir, 'store.snapshot');
  const store = await startStore({ env: { ...storeEnv(undefined), STORE_SNAPSHOT_PATH: path, STORE_WARMUP_KEYS: '0' }, timeoutMs: LONG, detached: true });
  await fill(store, keys, 'line');
  if ((await store.stop('SIGTERM', LONG)) !== 0) throw new Error('the store did not write its snapshot');
  return path;
}

/** Redis's RDB of `keys` keys in `dir`: written by SAVE. */
async function writeRdb(dir: string, keys: number): Promise<void> {
  const redis = await startRedis({ args: ['--dir', dir, '--dbfilename', 'dump.rdb', '--save', '', '--appendonly', 'no'], timeoutMs: LONG, detached: true });
  await fill(redis, keys, 'resp');
  const reply = await redisCommand(redis.port, 'SAVE');
  redis.kill();
  await redis.exited;
  if (!reply.startsWith('+OK')) throw new Error(`SAVE answered ${reply}`);
}

const fmt = (xs: readonly number[], digits = 0): string =>
  xs.length === 0 ? '–' : `${median(xs)!.toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
const MiB = (b: number | undefined): number | undefined => (b === undefined ? undefined : b / 2 ** 20);
const defined = (xs: readonly (number | undefined)[]): number[] => xs.filter((x): x is number => x !== undefined);

const scenarios: { name: string; keys: number; kvstack?: string; redisDir?: string }[] = [{ name: 'empty', keys: 0 }];
const dirs: string[] = [];
try {
  for (const keys of sizes) {
    const dir = mkdtempSync(join(tmpdir(), 'kvstack-startbench-'));
    dirs.push(dir);
    log(`writing a snapshot of ${keys} keys of ${valueSize} bytes ...`);
    const snapshot = await writeSnapshot(dir, keys);
    if (withRedis) {
      log(`writing Redis's RDB of the same keys ...`);
      await writeRdb(dir, keys);
    }
    scenarios.push({ name: `${keys.toLocaleString('en-US')} keys`, keys, kvstack: snapshot, redisDir: dir });
  }
  if (values.built) {
    log('building the compiled JavaScript (npm run build) ...');
    buildDist(process.cwd());
    if (values.against !== undefined) buildDist(values.against);
  }
  log('one start of the store, not timed, so that Node has compiled its modules into its cache');
  await startKvstack(undefined, false);
  if (values.against !== undefined) await startKvstack(undefined, false, values.against);

  const systems: System[] = ['kvstack', ...(withRedis ? (['redis'] as const) : []), ...(values.against !== undefined ? (['against'] as const) : [])];
  const results = new Map<string, Record<System, Start[]>>(scenarios.map((s) => [s.name, { kvstack: [], redis: [], against: [] }]));
  for (let r = 1; r <= rounds; r++) {
    for (const s of scenarios) {
      // Each round in the other order, so a machine growing busier weighs on every system.
      const order = r % 2 === 1 ? systems : [...systems].reverse();
      for (const system of order) {
        const idle = s.keys === 0;
        const start =
          system === 'redis'
            ? await startRedisWith(s.redisDir, idle)
            : await startKvstack(s.kvstack, idle, system === 'against' ? values.against : undefined);
        if (start.keys !== s.keys) throw new Error(`${system} served ${start.keys} keys, not ${s.keys}`);
        log(`round ${r}/${rounds}, ${s.name}, ${system}: serving after ${start.servingMs.toFixed(0)} ms`);
        results.get(s.name)![system].push(start);
      }
    }
  }

  const label: Record<System, string> = { kvstack: 'kvstack', redis: 'Redis', against: 'kvstack (--against)' };
  const width = 30;
  const lines = [
    `start-up: spawn to the first PING answered, ms; idle RSS after ${idleMs} ms, MiB; median (range) of ${rounds} rounds, the systems alternating; values of ${valueSize} bytes; Node ${process.version}; kvstack ${values.built ? 'compiled (dist/, as the image runs it)' : 'from its TypeScript sources (as npm start runs it)'}`,
    '',
    `${'scenario'.padEnd(28)}${systems.map((system) => label[system].padEnd(width)).join('')}`,
  ];
  /** A row's cells: `f` of each system's starts in `scenario`, empty for Redis where `storeOnly`. */
  const cells = (scenario: string, f: (x: Start) => number | undefined, digits = 0, storeOnly = false) =>
    systems.map((system) => (storeOnly && system === 'redis' ? '' : fmt(defined(results.get(scenario)![system].map(f)), digits)).padEnd(width)).join('');
  for (const s of scenarios) {
    lines.push(`${`${s.name}: serving ms`.padEnd(28)}${cells(s.name, (x) => x.servingMs)}`);
    for (const part of ['modulesMs', 'warmupMs', 'snapshotLoadMs', 'otherMs']) {
      lines.push(`${`  of which ${part.replace(/Ms$/, '')}`.padEnd(28)}${cells(s.name, (x) => x.startup?.[part], 0, true)}`);
    }
  }
  lines.push(
    `${'idle RSS MiB'.padEnd(28)}${cells('empty', (x) => MiB(x.rssBytes), 1)}`,
    `${'backend idle RSS MiB'.padEnd(28)}${cells('empty', (x) => MiB(x.backendRssBytes), 1, true)}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
