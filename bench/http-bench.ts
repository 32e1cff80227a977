// HTTP benchmark of the backend: GET of a prefilled key at 50 concurrent connections,
// measured against servers running as child processes. The load generator is wrk (C,
// one thread) when it is on PATH, else autocannon (JavaScript, in this process, and
// about twice as hungry for the CPU the servers share with it: docs/benchmarks.md#the-http-path);
// the report names it.
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
//   backend-tokens    the backend as shipped with bearer tokens (a table of 20), every request
//                     sending one (not in the default set)
//   backend-https     the backend as shipped over HTTPS (a P-256 certificate made with openssl
//                     for the run; kept-alive connections, so mostly the cost of encryption;
//                     wrk only; not in the default set)
//
// This file runs the rounds; http-load-generators.ts drives wrk or autocannon,
// http-bench-servers.ts is each mode's server, http-bench-report.ts prints the report.
// `npm run bench` calls runHttpBench(); `node bench/http-bench.ts [--duration s]
// [--warmup s] [--rounds n] [--connections n] [--modes a,b] [--load-generator wrk|autocannon]
// [--json]` runs it alone. A benchmark, not a test:
// numbers depend on the machine; compare modes within one run.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort } from '../services/shared/free-port.ts';
import { median, medianBy } from './harness/median.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { processCpuSeconds } from './harness/process-cpu.ts';
import { startStore, type Service } from './harness/services.ts';
import { BENCH_TOKEN } from './http-bench-servers.ts';
import { ALL_HTTP_BENCH_MODES, formatHttpBench, HTTP_BENCH_MODES, type HttpBenchMode, type HttpBenchReport, type HttpBenchResult } from './http-bench-report.ts';
import { autocannonLoadGenerator, defaultLoadGenerator, wrkLoadGenerator, type LoadGenerator, type LoadGeneratorName, type LoadRun } from './http-load-generators.ts';

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

/** One mode in one round; the ranges of HttpBenchResult are filled in over the rounds. */
type RoundResult = Omit<HttpBenchResult, 'requestsPerSecondRange' | 'p99RangeMs'>;

/** Lowest and highest of some figure over the rounds. */
const range = (values: readonly number[]): [number, number] => [Math.min(...values), Math.max(...values)];

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
  // The HTTPS mode's certificate, made for this run and removed with its directory.
  const tlsArgs = modes.includes('backend-https') ? makeCertificate(reportDir) : [];
  // One store; two more when a mode runs over a ring of three (they hold the key too, so
  // the ring may route it to any of them).
  const storeCount = modes.includes('backend-3-shards') ? 3 : 1;
  const stores: Service[] = [];
  const results: HttpBenchResult[] = [];
  try {
    for (let i = 0; i < storeCount; i++) stores.push(await startStore({ env: { STORE_HOST: '127.0.0.1' } }));
    for (const store of stores) await prefill(store.port, valueBytes);
    const storePorts = stores.map((s) => s.port);
    const [storePort] = storePorts as [number];
    // Rounds interleave the modes (A B C, A B C, ...) so a burst of load from elsewhere
    // on a shared machine does not land on one mode only; each mode reports its median round.
    const runOne = async (mode: HttpBenchMode, round: number): Promise<RoundResult> => {
      const port = await freePort();
      const report = join(reportDir, `${mode}-${round}.json`);
      const servedStores = mode === 'backend-3-shards' ? storePorts.join(',') : String(storePort);
      const server = startChild(['bench/http-bench-servers.ts', '--mode', mode, '--port', String(port), '--store-port', servedStores, '--report', report, ...(mode === 'backend-https' ? tlsArgs : [])], {});
      const headers = mode === 'backend-tokens' ? { Authorization: `Bearer ${BENCH_TOKEN}` } : undefined;
      let r: LoadRun;
      let storeCpu: number | undefined;
      let loadGeneratorCpuPercent = 0;
      try {
        await waitForPort(port, server);
        log(`http-bench: round ${round}/${roundCount} ${mode}: ${warmupSeconds}s warm-up + ${durationSeconds}s at ${connections} connections (${loadGeneratorName})`);
        const url = `${mode === 'backend-https' ? 'https' : 'http'}://127.0.0.1:${port}/${KEY}`;
        if (warmupSeconds > 0) await load(url, connections, warmupSeconds, headers);
        server.kill('SIGUSR2'); // the server starts counting CPU time and requests here
        const storeCpuBefore = sumCpu(stores);
        const startedAt = performance.now();
        r = await load(url, connections, durationSeconds, headers);
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
    for (const store of stores) await store.stop();
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
  ratio('bearer tokens: backend-tokens / backend (goal >= 0.95)', rps('backend-tokens'), rps('backend'));
  ratio('HTTPS: backend-https / backend', rps('backend-https'), rps('backend'));
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
  delta('bearer tokens, server CPU µs/req (backend-tokens - backend)', cpu('backend-tokens'), cpu('backend'));
  delta('HTTPS, server CPU µs/req (backend-https - backend)', cpu('backend-https'), cpu('backend'));
  return { loadGenerator: loadGeneratorName, connections, durationSeconds, rounds: roundCount, node: process.version, results, ratios };
}

/** CPU time of every store, in µs (undefined if one cannot be read). */
function sumCpu(children: readonly { readonly pid: number }[]): number | undefined {
  let sum = 0;
  for (const c of children) {
    const cpu = processCpuSeconds(c.pid);
    if (cpu === undefined) return undefined;
    sum += cpu * 1e6;
  }
  return sum;
}

/** A self-signed P-256 certificate for 127.0.0.1 in `dir`: the HTTPS mode's server arguments. */
function makeCertificate(dir: string): string[] {
  const cert = join(dir, 'bench.crt');
  const key = join(dir, 'bench.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return ['--tls-cert', cert, '--tls-key', key];
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

function parseLoadGenerator(name: string | undefined): LoadGeneratorName | undefined {
  if (name === undefined || name === 'wrk' || name === 'autocannon') return name;
  throw new Error(`unknown load generator ${name}; wrk or autocannon`);
}

if (import.meta.main) {
  const values = parseOptions('Usage: node bench/http-bench.ts [--duration s] [--warmup s] [--rounds n] [--connections n] [--modes a,b] [--load-generator wrk|autocannon] [--json]', {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    modes: { type: 'string' },
    rounds: { type: 'string' },
    'load-generator': { type: 'string' },
    json: { type: 'boolean' },
  });
  {
    const modes = values.modes?.split(',') as HttpBenchMode[] | undefined;
    for (const m of modes ?? []) if (!ALL_HTTP_BENCH_MODES.includes(m)) throw new Error(`unknown mode ${m}; modes: ${ALL_HTTP_BENCH_MODES.join(', ')}`);
    const optional = (name: string, raw: string | undefined) => (raw ? numberOption(name, raw, NaN) : undefined);
    const report = await runHttpBench({
      durationSeconds: optional('--duration', values.duration),
      warmupSeconds: optional('--warmup', values.warmup),
      connections: optional('--connections', values.connections),
      rounds: optional('--rounds', values.rounds),
      modes,
      loadGenerator: parseLoadGenerator(values['load-generator']),
    });
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatHttpBench(report)}\n`);
  }
}
