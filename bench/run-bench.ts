// `npm run bench`: the kvstack store against Redis with the same client (`kv bench`,
// at pipeline depth 1 and 16), the HTTP backend (wrk, or autocannon without it, through bench/http-bench.ts),
// and memory per key (1,000,000 keys of 100 bytes in a fresh store and a fresh Redis).
// Every server is a child process of this script and is killed when it exits, also on
// an error or Ctrl-C. Prints one table with the exact command lines; --json <file> saves it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { StoreConnection } from '../services/client/index.ts';
import type { BenchResult } from '../services/cli/bench/bench-runner.ts';
import type { HttpBenchReport } from './http-bench.ts';
import { freePort } from '../services/shared/free-port.ts';
import { medianBy } from './median.ts';
import { jsonLineWithMsg, spawnUntilReady } from '../test/helpers/spawn-until-ready.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

const HELP = `Usage: npm run bench -- [options]

  --duration <s>       seconds per measured run (default 5; env BENCH_DURATION)
  --rounds <n>         store runs per depth, kvstack and Redis interleaved; medians are
                       reported (default 3; env BENCH_ROUNDS)
  --warmup <s>         unmeasured seconds before each run (default 1; env BENCH_WARMUP)
  --connections <n>    connections (default 50)
  --keyspace <n>       keys (default 100000)
  --value-size <b>     bytes per value (default 100)
  --memory-keys <n>    keys loaded for the memory test (default 1000000; env BENCH_MEMORY_KEYS; 0 skips it)
  --threads <n>        kv bench worker threads (default 1)
  --quick              2 s runs, 0.5 s warm-up, 100000 keys for memory (env BENCH_QUICK=1)
  --no-redis           skip Redis even when redis-server is on PATH
  --no-http            skip the HTTP benchmark (bench/http-bench.ts, wrk or autocannon)
  --json <file>        also write the results as JSON (e.g. bench-results/latest.json)
`;

interface Settings {
  readonly duration: number;
  readonly rounds: number;
  readonly warmup: number;
  readonly connections: number;
  readonly keyspace: number;
  readonly valueSize: number;
  readonly memoryKeys: number;
  readonly threads: number;
  readonly redis: boolean;
  readonly http: boolean;
  readonly jsonFile: string | undefined;
}

function settings(): Settings {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    allowNegative: true,
    options: {
      duration: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      keyspace: { type: 'string' },
      'value-size': { type: 'string' },
      'memory-keys': { type: 'string' },
      threads: { type: 'string' },
      quick: { type: 'boolean' },
      redis: { type: 'boolean' },
      http: { type: 'boolean' },
      json: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const env = process.env;
  const quick = values.quick ?? env.BENCH_QUICK === '1';
  const num = (name: string, raw: string | undefined, fallback: number): number => {
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${JSON.stringify(raw)}: expected a number`);
    return n;
  };
  return {
    duration: num('--duration', values.duration ?? env.BENCH_DURATION, quick ? 2 : 5),
    rounds: Math.max(1, Math.round(num('--rounds', values.rounds ?? env.BENCH_ROUNDS, quick ? 1 : 3))),
    warmup: num('--warmup', values.warmup ?? env.BENCH_WARMUP, quick ? 0.5 : 1),
    connections: num('--connections', values.connections, 50),
    keyspace: num('--keyspace', values.keyspace, 100_000),
    valueSize: num('--value-size', values['value-size'], 100),
    memoryKeys: num('--memory-keys', values['memory-keys'] ?? env.BENCH_MEMORY_KEYS, quick ? 100_000 : 1_000_000),
    threads: num('--threads', values.threads, 1),
    redis: values.redis ?? true,
    http: values.http ?? true,
    jsonFile: values.json,
  };
}

// ---------------------------------------------------------------- child processes

const children = new Set<ChildProcess>();

/**
 * Children run in their own process group (spawned detached), so killing the group also
 * takes down anything they started themselves (http-bench starts its own servers).
 */
function killAll(): void {
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
}

process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    killAll();
    process.stderr.write(`\nbench: interrupted (${signal})\n`);
    process.exit(130);
  });
}

const log = (text: string) => process.stderr.write(`bench: ${text}\n`);

/** A shell-style rendering of a command, for the report. */
function shellLine(env: Record<string, string>, cmd: string, args: readonly string[]): string {
  const q = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);
  return [...Object.entries(env).map(([k, v]) => `${k}=${q(v)}`), q(cmd), ...args.map(q)].join(' ');
}

interface Server {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly metricsPort?: number;
  readonly command: string;
  stop(): Promise<void>;
}

/** Spawns a server and resolves once `ready(line)` returns its ports (rejects if it exits first or hangs). */
async function startServer(
  label: string,
  cmd: string,
  args: string[],
  env: Record<string, string>,
  ready: (line: string) => { port: number; metricsPort?: number } | undefined,
): Promise<Server> {
  const p = await spawnUntilReady({ label, command: cmd, args, cwd: root, env, ready, detached: true });
  children.add(p.child);
  return {
    child: p.child,
    pid: p.pid,
    ...p.ready,
    command: shellLine(env, cmd === process.execPath ? 'node' : cmd, args),
    async stop() {
      await p.stop('SIGTERM', 5000);
      children.delete(p.child);
    },
  };
}

function jsonReady(msg: string) {
  const isReady = jsonLineWithMsg(msg);
  return (line: string) => {
    const entry = isReady(line);
    return entry ? { port: entry.port as number, metricsPort: entry.metricsPort as number | undefined } : undefined;
  };
}

function startStore(): Promise<Server> {
  return startServer(
    'store',
    process.execPath,
    ['services/store/main.ts'],
    { STORE_PORT: '0', STORE_METRICS_PORT: '0', MAX_MEMORY_BYTES: String(8 * 1024 ** 3), LOG_LEVEL: 'info' },
    jsonReady('kvstore ready'),
  );
}

function redisAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

async function startRedis(): Promise<Server> {
  const port = await freePort();
  return startServer('redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {}, (line) =>
    line.includes('Ready to accept connections') ? { port } : undefined,
  );
}

// ---------------------------------------------------------------- measurements

interface StoreRun {
  readonly command: string;
  readonly result: BenchResult;
}

/** Runs `kv bench ... --json` as a child process (its progress bar goes to our stderr). */
async function kvBench(args: string[]): Promise<StoreRun> {
  const full = ['bin/kv.js', 'bench', ...args, '--json'];
  const child = spawn(process.execPath, full, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  children.delete(child);
  const command = shellLine({}, 'node', full);
  let parsed: (BenchResult & { ok: boolean; error?: string }) | undefined;
  try {
    parsed = JSON.parse(out);
  } catch {
    // handled below
  }
  if (!parsed || parsed.error) throw new Error(`${command} failed (exit ${code}): ${parsed?.error ?? out}`);
  if (!parsed.ok) log(`WARNING: ${parsed.errors} error replies, ${parsed.wrongReplies} wrong replies in: ${command}`);
  return { command, result: parsed };
}

/** Resident set size of a process in bytes (Linux /proc), or undefined elsewhere. */
function procRss(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

async function storeMetricRss(server: Server): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const m = /^process_resident_memory_bytes (\d+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** One RESP inline command on a fresh connection; resolves with the raw reply text. */
function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolveReply, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (c: Buffer) => {
      reply += c.toString();
      const m = /^\$(\d+)\r\n/.exec(reply);
      const complete = m ? reply.length >= m[0].length + Number(m[1]) + 2 : reply.includes('\r\n');
      if (complete) {
        socket.destroy();
        resolveReply(reply);
      }
    });
    socket.on('error', reject);
  });
}

async function redisRss(server: Server): Promise<{ rss: number; method: string }> {
  const fromProc = procRss(server.pid);
  if (fromProc !== undefined) return { rss: fromProc, method: '/proc/<pid>/status VmRSS' };
  const info = await redisCommand(server.port, 'INFO memory');
  return { rss: Number(/used_memory_rss:(\d+)/.exec(info)![1]), method: 'INFO memory used_memory_rss' };
}

async function storeRss(server: Server): Promise<{ rss: number; method: string }> {
  const fromProc = procRss(server.pid);
  if (fromProc !== undefined) return { rss: fromProc, method: '/proc/<pid>/status VmRSS' };
  return { rss: (await storeMetricRss(server))!, method: '/metrics process_resident_memory_bytes' };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface MemoryResult {
  readonly keys: number;
  readonly baselineBytes: number;
  readonly loadedBytes: number;
  readonly bytesPerKey: number;
  readonly method: string;
  readonly loadCommand: string;
  readonly serverCommand: string;
  readonly note?: string;
}

async function memoryPerKey(kind: 'kvstack' | 'redis', s: Settings): Promise<MemoryResult> {
  const server = kind === 'kvstack' ? await startStore() : await startRedis();
  try {
    const rss = kind === 'kvstack' ? storeRss : redisRss;
    // Baseline: the empty process after one round trip (so connection buffers exist).
    if (kind === 'kvstack') {
      const c = new StoreConnection({ host: '127.0.0.1', port: server.port });
      await c.ping();
      c.destroy();
    } else {
      await redisCommand(server.port, 'PING');
    }
    await settle(500);
    const before = await rss(server);
    const args = ['--host', '127.0.0.1', '--port', String(server.port), '-n', '0', '-r', String(s.memoryKeys), '--value-size', String(s.valueSize), '-c', String(s.connections)];
    if (kind === 'redis') args.push('--protocol', 'resp');
    const load = await kvBench(args);
    let note: string | undefined;
    if (kind === 'kvstack') {
      const c = new StoreConnection({ host: '127.0.0.1', port: server.port });
      const stats = await c.stats();
      c.destroy();
      note = `store USAGE ${Number(stats.usage_bytes) / s.memoryKeys} B/key (key + value bytes), ${stats.keys} keys`;
    } else {
      const dbsize = await redisCommand(server.port, 'DBSIZE');
      const info = await redisCommand(server.port, 'INFO memory');
      const used = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
      note = `used_memory ${Math.round(used / s.memoryKeys)} B/key, ${dbsize.trim().slice(1)} keys`;
    }
    // Let the process settle (allocator, V8's idle GC) before reading RSS.
    await settle(1000);
    const after = await rss(server);
    return {
      keys: s.memoryKeys,
      baselineBytes: before.rss,
      loadedBytes: after.rss,
      bytesPerKey: Math.round((after.rss - before.rss) / s.memoryKeys),
      method: after.method,
      loadCommand: load.command,
      serverCommand: server.command,
      note,
    };
  } finally {
    await server.stop();
  }
}

interface HttpRun {
  readonly command: string;
  readonly report: HttpBenchReport;
}

/**
 * The HTTP side: bench/http-bench.ts (wrk, else autocannon) starts its own store and one server per
 * mode (the backend as shipped, bare Express, ...), run here as a child process.
 */
async function httpBench(s: Settings): Promise<HttpRun> {
  const args = ['bench/http-bench.ts', '--duration', String(s.duration), '--warmup', String(s.warmup), '--connections', String(s.connections), '--rounds', String(s.rounds), '--json'];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  children.delete(child);
  const command = shellLine({}, 'node', args);
  try {
    return { command, report: JSON.parse(out) as HttpBenchReport };
  } catch {
    throw new Error(`${command} failed (exit ${code})`);
  }
}

// ---------------------------------------------------------------- report

const fmt = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !b ? '—' : `${(a / b).toFixed(2)}x`);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('   ')).join('\n');
}

async function main(): Promise<void> {
  const s = settings();
  const withRedis = s.redis && redisAvailable();
  if (s.redis && !withRedis) log('redis-server is not on PATH: Redis columns are skipped');
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    settings: s,
  };
  const commands: string[] = [];

  const store = await startStore();
  commands.push(`store:   ${store.command}`);
  const redis = withRedis ? await startRedis() : undefined;
  if (redis) commands.push(`redis:   ${redis.command}`);

  // Rounds interleave kvstack and Redis (alternating which goes first), so a machine
  // that gets busier or quieter during the run affects both; medians are reported.
  const depths = [1, 16];
  const storeRuns: Record<number, { kvstack: StoreRun[]; redis: StoreRun[] }> = {};
  for (const depth of depths) {
    const common = ['-c', String(s.connections), '-P', String(depth), '-d', String(s.duration), '-r', String(s.keyspace), '--value-size', String(s.valueSize), '--ratio', '9:1', '--warmup', String(s.warmup)];
    if (s.threads > 1) common.push('--threads', String(s.threads));
    const runs: { kvstack: StoreRun[]; redis: StoreRun[] } = { kvstack: [], redis: [] };
    for (let round = 1; round <= s.rounds; round++) {
      const order: ('kvstack' | 'redis')[] = round % 2 === 1 || !redis ? ['kvstack', 'redis'] : ['redis', 'kvstack'];
      for (const which of order) {
        if (which === 'kvstack') {
          log(`kvstack, pipeline depth ${depth}, round ${round}/${s.rounds}, ${s.duration} s ...`);
          runs.kvstack.push(await kvBench(['--host', '127.0.0.1', '--port', String(store.port), ...common]));
        } else if (redis) {
          log(`Redis, pipeline depth ${depth}, round ${round}/${s.rounds}, ${s.duration} s ...`);
          runs.redis.push(await kvBench(['--host', '127.0.0.1', '--port', String(redis.port), '--protocol', 'resp', ...common]));
        }
      }
    }
    commands.push(`bench:   ${runs.kvstack[0]!.command}`);
    if (runs.redis[0]) commands.push(`bench:   ${runs.redis[0].command}`);
    storeRuns[depth] = runs;
  }
  const median = (runs: StoreRun[]): StoreRun | undefined => medianBy(runs, (r) => r.result.opsPerSec);
  const roundRatios = (d: number): number[] => storeRuns[d]!.redis.map((r, i) => storeRuns[d]!.kvstack[i]!.result.opsPerSec / r.result.opsPerSec);
  results.store = Object.fromEntries(
    depths.map((d) => [
      `depth${d}`,
      {
        kvstack: median(storeRuns[d]!.kvstack)!.result,
        redis: median(storeRuns[d]!.redis)?.result ?? null,
        rounds: storeRuns[d]!.kvstack.map((k, i) => ({ kvstack: k.result.opsPerSec, redis: storeRuns[d]!.redis[i]?.result.opsPerSec ?? null })),
      },
    ]),
  );
  await redis?.stop();

  await store.stop();

  let http: HttpRun | undefined;
  if (s.http) {
    log(`HTTP backend: bench/http-bench.ts, every mode, ${s.warmup} s + ${s.duration} s each ...`);
    http = await httpBench(s);
    commands.push(`http:    ${http.command}`);
  }
  results.http = http?.report ?? null;

  let memory: { kvstack: MemoryResult; redis?: MemoryResult } | undefined;
  if (s.memoryKeys > 0) {
    log(`memory: ${fmt(s.memoryKeys)} keys of ${s.valueSize} bytes into a fresh store ...`);
    const kvMem = await memoryPerKey('kvstack', s);
    commands.push(`memory:  ${kvMem.serverCommand}`, `         ${kvMem.loadCommand}`);
    let rdMem: MemoryResult | undefined;
    if (withRedis) {
      log(`memory: ${fmt(s.memoryKeys)} keys of ${s.valueSize} bytes into a fresh Redis ...`);
      rdMem = await memoryPerKey('redis', s);
      commands.push(`memory:  ${rdMem.serverCommand}`, `         ${rdMem.loadCommand}`);
    }
    memory = { kvstack: kvMem, redis: rdMem };
  }
  results.memory = memory ?? null;
  results.commands = commands;

  // ---- the table
  const rows: string[][] = [['', 'kvstack', 'Redis', 'kvstack/Redis']];
  for (const d of depths) {
    const k = median(storeRuns[d]!.kvstack)!.result;
    const r = median(storeRuns[d]!.redis)?.result;
    rows.push([`depth ${d}: ops/s`, fmt(k.opsPerSec), fmt(r?.opsPerSec), ratio(k.opsPerSec, r?.opsPerSec)]);
    for (const [name, key] of [['p50', 'p50'], ['p99', 'p99'], ['p99.9', 'p999']] as const) {
      rows.push([`depth ${d}: ${name} ms`, fmt(k.latencyMs[key], 3), fmt(r?.latencyMs[key], 3), ratio(k.latencyMs[key], r?.latencyMs[key])]);
    }
    rows.push([`depth ${d}: errors / wrong`, `${k.errors} / ${k.wrongReplies}`, r ? `${r.errors} / ${r.wrongReplies}` : '—', '']);
  }
  if (memory) {
    rows.push([`memory: RSS bytes/key (${fmt(s.memoryKeys)} keys)`, fmt(memory.kvstack.bytesPerKey), fmt(memory.redis?.bytesPerKey), ratio(memory.kvstack.bytesPerKey, memory.redis?.bytesPerKey)]);
    rows.push(['memory: baseline RSS MiB', fmt(memory.kvstack.baselineBytes / 2 ** 20, 1), fmt(memory.redis && memory.redis.baselineBytes / 2 ** 20, 1), '']);
  }
  const lines = [
    '',
    `kvstack benchmark — ${s.connections} connections, GET:SET 9:1, ${s.valueSize}-byte values, ${fmt(s.keyspace)} keys, ${s.duration} s per run, same client (kv bench) for both`,
    `median of ${s.rounds} interleaved round${s.rounds === 1 ? '' : 's'} per depth`,
    `${results.cpus} CPUs, Node ${process.version}; the servers and the client share the machine.`,
    '',
    table(rows),
  ];
  if (withRedis && s.rounds > 1) {
    lines.push('', ...depths.map((d) => `depth ${d}: kvstack/Redis ops/s per round ${roundRatios(d).map((x) => x.toFixed(2) + 'x').join(', ')}`));
  }
  if (memory) {
    lines.push('', `memory: (RSS after loading − RSS of the empty process) / keys, via ${memory.kvstack.method}; ${memory.kvstack.note}${memory.redis ? `; Redis ${memory.redis.note}` : ''}`);
  }
  if (http) {
    const r = http.report;
    lines.push('', `HTTP (${r.loadGenerator}, GET of a prefilled key, ${r.connections} connections, ${r.durationSeconds} s per mode)`, '');
    const httpRows = [['mode', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'errors', 'non-2xx']];
    for (const m of r.results) {
      httpRows.push([m.mode, fmt(m.requestsPerSecond), fmt(m.latencyMs.p50, 2), fmt(m.latencyMs.p90, 2), fmt(m.latencyMs.p99, 2), String(m.errors), String(m.non2xx)]);
    }
    lines.push(table(httpRows), '', ...Object.entries(r.ratios).map(([k, v]) => `${k}: ${v}`));
  }
  lines.push('', 'Commands:', ...commands.map((c) => `  ${c}`), '');
  process.stdout.write(lines.join('\n'));

  if (s.jsonFile) {
    const file = resolve(process.cwd(), s.jsonFile);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
    log(`results written to ${s.jsonFile}`);
  }
}

main().then(
  () => {
    killAll();
  },
  (err: unknown) => {
    killAll();
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
