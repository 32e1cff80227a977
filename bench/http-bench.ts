// HTTP benchmark of the backend: GET of a prefilled key at 50 concurrent connections,
// measured against servers running as child processes. The load generator is wrk (C,
// one thread) when it is on PATH, else autocannon (JavaScript, in this process, and
// about twice as hungry for the CPU the servers share with it); the report names it.
// Modes, all measured in the same run:
//
//   bare-node         node:http hello world: the ceiling of Node's HTTP server here
//   bare-express      Express 5 hello world: the ceiling any Express app can reach here
//   backend           the backend app as shipped: metrics on, access logs at info
//   backend-no-express... its one middleware on a bare node:http server (what Express costs it)
//   backend-no-logs   ... with LOG_LEVEL=silent (no pino-http at all)
//   backend-no-metrics... without the metrics (the cost of prom-client on the hot path)
//   backend-bare      ... with neither
//   naive             the backend app over one new TCP connection to the store per request
//   backend-3-shards  the backend as shipped over a ring of three stores (not in the default
//                     set: --modes backend,backend-3-shards). The key lives on one shard; the
//                     difference with `backend` is what routing over a ring costs a request
//
// `npm run bench` calls runHttpBench(); `node bench/http-bench.ts [--duration s]
// [--warmup s] [--rounds n] [--connections n] [--modes a,b] [--load-generator wrk|autocannon]
// [--json]` runs it alone. A benchmark, not a test:
// numbers depend on the machine; compare modes within one run.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createHttpServer } from 'node:http';
import { connect } from 'node:net';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '../services/shared/free-port.ts';
import { median, medianBy } from './median.ts';

export type HttpBenchMode =
  | 'bare-node'
  | 'bare-express'
  | 'backend'
  | 'backend-no-express'
  | 'backend-no-logs'
  | 'backend-no-metrics'
  | 'backend-bare'
  | 'naive'
  | 'backend-3-shards';
/** The modes measured by default (npm run bench). */
export const HTTP_BENCH_MODES: readonly HttpBenchMode[] = ['bare-node', 'bare-express', 'backend', 'backend-no-express', 'backend-no-logs', 'backend-no-metrics', 'backend-bare', 'naive'];
/** Every mode, for --modes. */
export const ALL_HTTP_BENCH_MODES: readonly HttpBenchMode[] = [...HTTP_BENCH_MODES, 'backend-3-shards'];

export interface HttpBenchOptions {
  /** Seconds measured per mode (after the warm-up). */
  readonly durationSeconds?: number;
  readonly warmupSeconds?: number;
  readonly connections?: number;
  readonly modes?: readonly HttpBenchMode[];
  /** Times every mode is measured, interleaved; the median round is reported. */
  readonly rounds?: number;
  /** Size of the prefilled value, in bytes. */
  readonly valueBytes?: number;
  /** wrk when it is on PATH, else autocannon. */
  readonly loadGenerator?: LoadGeneratorName;
  /** Progress lines (to stderr by default). */
  readonly log?: (line: string) => void;
}

export interface HttpBenchResult {
  readonly mode: HttpBenchMode;
  readonly requestsPerSecond: number;
  /** Lowest and highest req/s over the rounds: how far apart the rounds were. */
  readonly requestsPerSecondRange: readonly [number, number];
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  /** Lowest and highest p99 over the rounds, in ms. */
  readonly p99RangeMs: readonly [number, number];
  readonly requests: number;
  readonly errors: number;
  readonly non2xx: number;
  /** Count per status code, when any answer was not 2xx (a benchmark of errors is no benchmark). */
  readonly statusCodes: Record<string, number>;
  /** CPU time the server process spent per request during the measured run (user + system), in µs. */
  readonly serverCpuMicrosPerRequest: number | undefined;
  /** The same for the store process (Linux only: read from /proc). */
  readonly storeCpuMicrosPerRequest: number | undefined;
  /**
   * CPU the load generator used during the measured run, in % of one core: near 100
   * means it, not the server, sets the pace.
   */
  readonly loadGeneratorCpuPercent: number;
  /** Which round this (median) result comes from (its CPU figures are the medians over all rounds). */
  readonly round: number;
}

/** One mode in one round; the ranges of HttpBenchResult are filled in over the rounds. */
type RoundResult = Omit<HttpBenchResult, 'requestsPerSecondRange' | 'p99RangeMs'>;

/** Lowest and highest of some figure over the rounds. */
const range = (values: readonly number[]): [number, number] => [Math.min(...values), Math.max(...values)];

export interface HttpBenchReport {
  readonly loadGenerator: LoadGeneratorName;
  readonly connections: number;
  readonly durationSeconds: number;
  readonly rounds: number;
  readonly node: string;
  readonly results: readonly HttpBenchResult[];
  /** Ratios the goals are stated in, and CPU differences between modes, when both were measured. */
  readonly ratios: Record<string, number>;
}

export type LoadGeneratorName = 'wrk' | 'autocannon';

/** One measured run of a load generator. */
export interface LoadRun {
  readonly requestsPerSecond: number;
  readonly requests: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  /** Connection errors and time-outs. */
  readonly errors: number;
  readonly non2xx: number;
  readonly statusCodes: Record<string, number>;
  /** CPU time the load generator used (user + system), in µs. */
  readonly cpuMicros: number;
}
export type LoadGenerator = (url: string, connections: number, durationSeconds: number) => Promise<LoadRun>;

/** wrk if it is on PATH (Debian: apt-get install wrk), else autocannon. */
export function defaultLoadGenerator(): LoadGeneratorName {
  try {
    execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' });
    return 'wrk';
  } catch {
    return 'autocannon';
  }
}

// wrk's done() hook: its figures as JSON (latencies in µs) to the file WRK_REPORT names.
const WRK_REPORT_SCRIPT = `
done = function(summary, latency, requests)
  local e = summary.errors
  local f = assert(io.open(os.getenv("WRK_REPORT"), "w"))
  f:write(string.format('{"requests":%d,"durationMicros":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,' ..
    '"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.timeout, e.status))
  f:close()
end
`;

/**
 * wrk with one thread (one core at most), run under sh so that \`times\` reports its CPU
 * time once it has exited. Non-2xx counts come as one figure: wrk does not split them by
 * status (a response() hook would, at a cost per request).
 */
export function wrkLoadGenerator(workDir: string): LoadGenerator {
  const script = join(workDir, 'report.lua');
  writeFileSync(script, WRK_REPORT_SCRIPT);
  let runs = 0;
  return async (url, connections, durationSeconds) => {
    const report = join(workDir, `wrk-${++runs}.json`);
    const args = ['-t1', `-c${connections}`, `-d${durationSeconds}s`, '-s', script, url];
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = spawn('sh', ['-c', 'wrk "$@" >/dev/null && times', 'sh', ...args], { env: { ...process.env, WRK_REPORT: report }, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited with ${code}`))));
    });
    const r = JSON.parse(readFileSync(report, 'utf8')) as Record<string, number>;
    // `times` prints the shell's user and system time, then its children's: "0m1.23s 0m0.45s".
    const children = stdout.trim().split('\n').at(-1)!.match(/(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/);
    const cpuMicros = children ? (Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4])) * 1e6 : NaN;
    const ms = (micros: number) => micros / 1000;
    return {
      requestsPerSecond: r.requests! / (r.durationMicros! / 1e6),
      requests: r.requests!,
      latencyMs: { p50: ms(r.p50!), p90: ms(r.p90!), p99: ms(r.p99!), max: ms(r.max!) },
      errors: r.connect! + r.read! + r.write! + r.timeout!,
      non2xx: r.status!,
      statusCodes: (r.status! > 0 ? { 'not 2xx/3xx': r.status! } : {}) as Record<string, number>,
      cpuMicros,
    };
  };
}

export function autocannonLoadGenerator(): LoadGenerator {
  return async (url, connections, durationSeconds) => {
    const before = process.cpuUsage();
    const r = await autocannon({ url, connections, duration: durationSeconds });
    const used = process.cpuUsage(before);
    return {
      requestsPerSecond: r.requests.average,
      requests: r.requests.total,
      latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
      errors: r.errors + r.timeouts,
      non2xx: r.non2xx,
      statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count])),
      cpuMicros: used.user + used.system,
    };
  };
}

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p90: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats?: Record<string, { count: number }>;
}
type Autocannon = (opts: { url: string; connections: number; duration: number; pipelining?: number }) => Promise<AutocannonResult>;
// autocannon ships no types; this is the one call we make.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const root = fileURLToPath(new URL('../', import.meta.url));
const KEY = 'bench-key';

/** Resolves once something accepts TCP connections on the port (the child is up). */
async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`child exited with ${child.exitCode} before listening on ${port}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on ${port}`);
}

function startChild(args: string[], env: Record<string, string>): ChildProcess {
  // stdout to /dev/null: log lines are still written (a real write per line), nobody reads them.
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** Runs every requested mode, one after the other, and reports requests/s and latency. */
export async function runHttpBench(options: HttpBenchOptions = {}): Promise<HttpBenchReport> {
  const durationSeconds = options.durationSeconds ?? 5;
  const warmupSeconds = options.warmupSeconds ?? 1;
  const connections = options.connections ?? 50;
  const modes = options.modes ?? HTTP_BENCH_MODES;
  const valueBytes = options.valueBytes ?? 64;
  const roundCount = options.rounds ?? 1;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const loadGeneratorName = options.loadGenerator ?? defaultLoadGenerator();

  const reportDir = mkdtempSync(join(tmpdir(), 'kvstack-http-bench-'));
  const load = loadGeneratorName === 'wrk' ? wrkLoadGenerator(reportDir) : autocannonLoadGenerator();
  // One store; two more when a mode runs over a ring of three (they hold the key too, so
  // the ring may route it to any of them).
  const storeCount = modes.includes('backend-3-shards') ? 3 : 1;
  const storePorts: number[] = [];
  const stores: ChildProcess[] = [];
  for (let i = 0; i < storeCount; i++) {
    const p = await freePort();
    storePorts.push(p);
    stores.push(startChild(['services/store/main.ts'], { STORE_HOST: '127.0.0.1', STORE_PORT: String(p), STORE_METRICS_PORT: String(await freePort()), LOG_LEVEL: 'warn' }));
  }
  const [storePort] = storePorts as [number];
  const results: HttpBenchResult[] = [];
  try {
    for (const [i, p] of storePorts.entries()) {
      await waitForPort(p, stores[i]!);
      await prefill(p, valueBytes);
    }
    // Rounds interleave the modes (A B C, A B C, ...) so a burst of load from elsewhere
    // on a shared machine does not land on one mode only; each mode reports its median round.
    const runOne = async (mode: HttpBenchMode, round: number): Promise<RoundResult> => {
      const port = await freePort();
      const report = join(reportDir, `${mode}-${round}.json`);
      const servedStores = mode === 'backend-3-shards' ? storePorts.join(',') : String(storePort);
      const server = startChild(['bench/http-bench.ts', '--serve', mode, '--port', String(port), '--store-port', servedStores, '--report', report], {});
      let r: LoadRun;
      let storeCpu: number | undefined;
      let loadGeneratorCpuPercent = 0;
      try {
        await waitForPort(port, server);
        log(`http-bench: round ${round}/${roundCount} ${mode}: ${warmupSeconds}s warm-up + ${durationSeconds}s at ${connections} connections (${loadGeneratorName})`);
        const url = `http://127.0.0.1:${port}/${KEY}`;
        if (warmupSeconds > 0) await load(url, connections, warmupSeconds);
        server.kill('SIGUSR2'); // the server starts counting CPU time and requests here
        const storeCpuBefore = sumCpu(stores);
        const startedAt = performance.now();
        r = await load(url, connections, durationSeconds);
        loadGeneratorCpuPercent = Math.round((r.cpuMicros / ((performance.now() - startedAt) * 1000)) * 100);
        const storeCpuAfter = sumCpu(stores);
        if (storeCpuBefore !== undefined && storeCpuAfter !== undefined && r.requests > 0) {
          storeCpu = Math.round(((storeCpuAfter - storeCpuBefore) / r.requests) * 10) / 10;
        }
      } finally {
        await stopChild(server);
      }
      let cpu: number | undefined;
      try {
        const usage = JSON.parse(readFileSync(report, 'utf8')) as { cpuMicros: number; requests: number };
        if (usage.requests > 0) cpu = Math.round((usage.cpuMicros / usage.requests) * 10) / 10;
      } catch {
        // no report: the server died; the load generator's errors tell the story
      }
      const { cpuMicros: _loadGeneratorCpu, ...measured } = r;
      return {
        mode,
        ...measured,
        serverCpuMicrosPerRequest: cpu,
        storeCpuMicrosPerRequest: storeCpu,
        loadGeneratorCpuPercent,
        round,
      };
    };
    const rounds = modes.map((): RoundResult[] => []);
    for (let round = 1; round <= roundCount; round++) {
      for (const [i, mode] of modes.entries()) rounds[i]!.push(await runOne(mode, round));
    }
    for (const runs of rounds) {
      // CPU per request is the median of its own over the rounds, not the median round's:
      // on a shared machine the two are disturbed by different things.
      results.push({
        ...medianBy(runs, (r) => r.requestsPerSecond)!,
        requestsPerSecondRange: range(runs.map((r) => r.requestsPerSecond)),
        p99RangeMs: range(runs.map((r) => r.latencyMs.p99)),
        serverCpuMicrosPerRequest: median(runs.map((r) => r.serverCpuMicrosPerRequest)),
        storeCpuMicrosPerRequest: median(runs.map((r) => r.storeCpuMicrosPerRequest)),
      });
    }
  } finally {
    for (const child of stores) await stopChild(child);
    rmSync(reportDir, { recursive: true, force: true });
  }

  const rps = (mode: HttpBenchMode) => results.find((r) => r.mode === mode)?.requestsPerSecond;
  const ratios: Record<string, number> = {};
  const ratio = (name: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b !== undefined && b > 0) ratios[name] = Math.round((a / b) * 1000) / 1000;
  };
  ratio('backend / bare-express (goal >= 0.7)', rps('backend'), rps('bare-express'));
  ratio('bare-express / bare-node (the cost of Express)', rps('bare-express'), rps('bare-node'));
  ratio('cost of Express in the backend: backend / backend-no-express', rps('backend'), rps('backend-no-express'));
  ratio('backend / naive (goal >= 5)', rps('backend'), rps('naive'));
  ratio('backend-bare / bare-express', rps('backend-bare'), rps('bare-express'));
  ratio('cost of metrics: backend / backend-no-metrics', rps('backend'), rps('backend-no-metrics'));
  ratio('cost of logging: backend / backend-no-logs', rps('backend'), rps('backend-no-logs'));
  ratio('routing over a ring of three: backend-3-shards / backend (goal >= 0.95)', rps('backend-3-shards'), rps('backend'));
  // CPU per request is steadier than throughput on a shared machine: the costs in µs.
  const cpu = (mode: HttpBenchMode) => results.find((r) => r.mode === mode)?.serverCpuMicrosPerRequest;
  const delta = (name: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b !== undefined) ratios[name] = Math.round((a - b) * 10) / 10;
  };
  delta('Express, server CPU µs/req (backend - backend-no-express)', cpu('backend'), cpu('backend-no-express'));
  delta('metrics, server CPU µs/req (backend - backend-no-metrics)', cpu('backend'), cpu('backend-no-metrics'));
  delta('access logs, server CPU µs/req (backend - backend-no-logs)', cpu('backend'), cpu('backend-no-logs'));
  delta('store round trip and app, server CPU µs/req (backend-bare - bare-express)', cpu('backend-bare'), cpu('bare-express'));
  delta('routing over three shards, server CPU µs/req (backend-3-shards - backend)', cpu('backend-3-shards'), cpu('backend'));
  return { loadGenerator: loadGeneratorName, connections, durationSeconds, rounds: roundCount, node: process.version, results, ratios };
}

/** User + system CPU time of a process so far, in µs, from /proc (undefined elsewhere). */
function processCpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): utime is 14th, stime 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND) * 1e6;
  } catch {
    return undefined;
  }
}
// USER_HZ, 100 on every Linux this runs on (sysconf(_SC_CLK_TCK) is not reachable from Node).
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time of every store, in µs (undefined if one cannot be read). */
function sumCpu(children: readonly ChildProcess[]): number | undefined {
  let sum = 0;
  for (const c of children) {
    const cpu = processCpuMicros(c.pid!);
    if (cpu === undefined) return undefined;
    sum += cpu;
  }
  return sum;
}

async function prefill(storePort: number, valueBytes: number): Promise<void> {
  const { StoreConnection } = await import('../services/client/store-connection.ts');
  const conn = new StoreConnection({ host: '127.0.0.1', port: storePort, reconnect: false });
  try {
    await conn.set(KEY, 'x'.repeat(valueBytes));
  } finally {
    conn.destroy();
  }
}

export function formatHttpBench(report: HttpBenchReport): string {
  const lines = [
    `HTTP GET of a prefilled key, ${report.connections} connections (${report.loadGenerator}), ${report.durationSeconds}s per mode, median of ${report.rounds} round(s), Node ${report.node}`,
    '',
    'mode                  req/s   p50 ms  p90 ms  p99 ms  max ms  errors  non-2xx  server µs/req  store µs/req  load gen CPU',
  ];
  for (const r of report.results) {
    lines.push(
      `${r.mode.padEnd(18)} ${r.requestsPerSecond.toFixed(0).padStart(8)} ${r.latencyMs.p50.toFixed(2).padStart(8)} ${r.latencyMs.p90
        .toFixed(2)
        .padStart(7)} ${r.latencyMs.p99.toFixed(2).padStart(7)} ${r.latencyMs.max.toFixed(1).padStart(7)} ${String(r.errors).padStart(7)} ${String(
        r.non2xx,
      ).padStart(8)}  ${(r.serverCpuMicrosPerRequest === undefined ? '-' : r.serverCpuMicrosPerRequest.toFixed(1)).padStart(13)} ${(r.storeCpuMicrosPerRequest === undefined
        ? '-'
        : r.storeCpuMicrosPerRequest.toFixed(1)
      ).padStart(13)} ${`${r.loadGeneratorCpuPercent}%`.padStart(13)}`,
    );
  }
  if (report.rounds > 1) {
    lines.push('', 'req/s over the rounds (lowest-highest): ' + report.results.map((r) => `${r.mode} ${r.requestsPerSecondRange.map((v) => v.toFixed(0)).join('-')}`).join(', '));
    lines.push('p99 ms over the rounds (lowest-highest): ' + report.results.map((r) => `${r.mode} ${r.p99RangeMs.map((v) => v.toFixed(2)).join('-')}`).join(', '));
  }
  for (const r of report.results) {
    if (r.non2xx > 0) lines.push(`  ${r.mode}: status codes ${JSON.stringify(r.statusCodes)}`);
  }
  lines.push('');
  for (const [name, value] of Object.entries(report.ratios)) lines.push(`${name}: ${value}`);
  return lines.join('\n');
}

// ---- server roles, run as child processes by runHttpBench ----

/**
 * Counts requests and CPU time from SIGUSR2 (end of the warm-up) and writes them to
 * `report` on SIGTERM, after `stop` has run.
 */
function accountCpu(server: ReturnType<typeof createHttpServer>, report: string, stop: () => void): void {
  let requests = 0;
  let since = process.cpuUsage();
  server.on('request', () => requests++);
  process.on('SIGUSR2', () => {
    requests = 0;
    since = process.cpuUsage();
  });
  process.on('SIGTERM', () => {
    const used = process.cpuUsage(since);
    writeFileSync(report, JSON.stringify({ cpuMicros: used.user + used.system, requests }));
    stop();
    process.exit(0);
  });
}

async function serve(mode: HttpBenchMode, port: number, storePorts: readonly number[], report: string): Promise<void> {
  const storePort = storePorts[0]!;
  if (mode === 'bare-node') {
    const server = createHttpServer((_req, res) => {
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end('Hello World!');
    }).listen(port, '127.0.0.1');
    accountCpu(server, report, () => server.closeAllConnections());
    return;
  }
  if (mode === 'bare-express') {
    const { default: express } = await import('express');
    const app = express();
    app.get('/:key', (_req, res) => {
      res.send('Hello World!');
    });
    const server = createHttpServer(app).listen(port, '127.0.0.1');
    accountCpu(server, report, () => server.closeAllConnections());
    return;
  }
  const { createBackendApp, createBackendHandler } = await import('../services/backend/backend-app.ts');
  const { createBackendMetrics } = await import('../services/backend/backend-metrics.ts');
  const { ShardedStore } = await import('../services/client/sharded-store.ts');
  const { StoreConnection } = await import('../services/client/store-connection.ts');
  const { createLogger } = await import('../services/shared/logger.ts');
  const { createMetricsRegistry } = await import('../services/shared/metrics-registry.ts');
  const { loadBackendConfig } = await import('../services/shared/config.ts');

  const config = loadBackendConfig({});
  const withMetrics = mode === 'backend' || mode === 'backend-3-shards' || mode === 'backend-no-express' || mode === 'backend-no-logs' || mode === 'naive';
  const withLogs = mode === 'backend' || mode === 'backend-3-shards' || mode === 'backend-no-express' || mode === 'backend-no-metrics' || mode === 'naive';
  const logger = createLogger({ name: 'kvbackend', level: withLogs ? 'info' : 'silent' });
  const metrics = withMetrics ? createBackendMetrics({ registry: createMetricsRegistry() }) : undefined;
  // As the service builds it: a ring of one store, or of three, each shard with its own pool.
  const pool = new ShardedStore({
    shards: storePorts.map((p) => ({ name: `127.0.0.1:${p}`, host: '127.0.0.1', port: p })),
    pool: { size: config.storePoolSize, timeoutMs: config.storeTimeoutMs },
    observerFor: (shard) => metrics?.observerFor(shard),
  });
  const observer = metrics?.observerFor(`127.0.0.1:${storePort}`);

  // The pattern the SPEC rules out: a new TCP connection to the store for every command.
  const perRequest = <T>(run: (c: InstanceType<typeof StoreConnection>) => Promise<T>): Promise<T> => {
    const c = new StoreConnection({ host: '127.0.0.1', port: storePort, timeoutMs: config.storeTimeoutMs, reconnect: false });
    c.observer = observer;
    return run(c).finally(() => c.destroy());
  };
  const store =
    mode === 'naive'
      ? {
          get: (key: string) => perRequest((c) => c.get(key)),
          set: (key: string, value: Buffer | string, ttl?: number) => perRequest((c) => c.set(key, value, ttl)),
          del: (key: string) => perRequest((c) => c.del(key)),
        }
      : pool;
  if (mode !== 'naive') await pool.connect();
  const appOptions = { store, metrics, logger, maxValueBytes: config.maxValueBytes };
  const app = mode === 'backend-no-express' ? createBackendHandler(appOptions) : createBackendApp(appOptions);
  const server = createHttpServer(app).listen(port, '127.0.0.1');
  accountCpu(server, report, () => {
    server.closeAllConnections();
    pool.destroy();
  });
}

function parseLoadGenerator(name: string | undefined): LoadGeneratorName | undefined {
  if (name === undefined || name === 'wrk' || name === 'autocannon') return name;
  throw new Error(`unknown load generator ${name}; wrk or autocannon`);
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      port: { type: 'string' },
      'store-port': { type: 'string' },
      report: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      modes: { type: 'string' },
      rounds: { type: 'string' },
      'load-generator': { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  if (values.serve) {
    await serve(values.serve as HttpBenchMode, Number(values.port), values['store-port']!.split(',').map(Number), values.report ?? join(tmpdir(), 'http-bench-serve.json'));
  } else {
    const modes = values.modes?.split(',') as HttpBenchMode[] | undefined;
    for (const m of modes ?? []) if (!ALL_HTTP_BENCH_MODES.includes(m)) throw new Error(`unknown mode ${m}; modes: ${ALL_HTTP_BENCH_MODES.join(', ')}`);
    const report = await runHttpBench({
      durationSeconds: values.duration ? Number(values.duration) : undefined,
      warmupSeconds: values.warmup ? Number(values.warmup) : undefined,
      connections: values.connections ? Number(values.connections) : undefined,
      rounds: values.rounds ? Number(values.rounds) : undefined,
      modes,
      loadGenerator: parseLoadGenerator(values['load-generator']),
    });
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatHttpBench(report)}\n`);
  }
}
