// The printed form of an HTTP benchmark report.
import type { HttpBenchReport } from './http-bench.ts';

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
