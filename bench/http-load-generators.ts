// The HTTP benchmark's load generators: wrk (C, one thread) when it is on PATH, else
// autocannon (JavaScript, in this process). Each returns requests/s, latency and its own CPU.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

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
/** `headers` are sent with every request (an Authorization header, say). */
export type LoadGenerator = (url: string, connections: number, durationSeconds: number, headers?: Record<string, string>) => Promise<LoadRun>;

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
  return async (url, connections, durationSeconds, headers = {}) => {
    const report = join(workDir, `wrk-${++runs}.json`);
    // wrk takes whole seconds only (`-d0.5s` is a usage error): a shorter run is one second.
    const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
    const args = ['-t1', `-c${connections}`, `-d${Math.max(1, Math.ceil(durationSeconds))}s`, ...headerArgs, '-s', script, url];
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
  return async (url, connections, durationSeconds, headers) => {
    if (url.startsWith('https:')) throw new Error('the HTTPS mode needs wrk (autocannon here does not take the bench\'s own CA)');
    const before = process.cpuUsage();
    const r = await autocannon({ url, connections, duration: durationSeconds, headers });
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
type Autocannon = (opts: { url: string; connections: number; duration: number; pipelining?: number; headers?: Record<string, string> | undefined }) => Promise<AutocannonResult>;
// autocannon ships no types; this is the one call we make.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
