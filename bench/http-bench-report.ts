// What the HTTP benchmark reports (its modes, each mode's figures) and its printed form.
import type { LoadGeneratorName } from './http-load-generators.ts';

export type HttpBenchMode =
  | 'bare-node'
  | 'bare-express'
  | 'backend'
  | 'backend-no-express'
  | 'backend-no-logs'
  | 'backend-no-metrics'
  | 'backend-bare'
  | 'naive'
  | 'backend-3-shards'
  | 'backend-tokens'
  | 'backend-https';
/** The modes measured by default (npm run bench). */
export const HTTP_BENCH_MODES: readonly HttpBenchMode[] = ['bare-node', 'bare-express', 'backend', 'backend-no-express', 'backend-no-logs', 'backend-no-metrics', 'backend-bare', 'naive'];
/** Every mode, for --modes. */
export const ALL_HTTP_BENCH_MODES: readonly HttpBenchMode[] = [...HTTP_BENCH_MODES, 'backend-3-shards', 'backend-tokens', 'backend-https'];

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
