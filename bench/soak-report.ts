// What a soak run reports, and its printed form.
import type { Mismatch } from './soak-verifier.ts';

export interface SoakOptions {
  readonly durationSec: number;
  readonly httpWorkers: number;
  readonly tcpWorkers: number;
  readonly tcpDepth: number;
  readonly keysPerWorker: number;
  readonly sampleEverySec: number;
  /** Progress lines (stderr by default). */
  readonly log?: (line: string) => void;
}

export interface MemorySample {
  readonly atSec: number;
  readonly storeRssBytes: number;
  readonly backendRssBytes: number;
  /** V8 heap in use: flat while RSS grows means garbage-collector slack, not a leak. */
  readonly storeHeapUsedBytes: number;
  readonly backendHeapUsedBytes: number;
  /** Memory outside the V8 heap held by JavaScript objects (Buffers, mostly). */
  readonly storeExternalBytes: number;
  readonly backendExternalBytes: number;
  readonly storeUsageBytes: number;
  readonly storeKeys: number;
}

export interface PathStats {
  ops: number;
  reads: number;
  writes: number;
  deletes: number;
  /** Reads that were checked against the verifier's state. */
  verified: number;
  readonly latenciesMs: number[];
}

export interface SoakReport {
  readonly options: SoakOptions;
  readonly seconds: number;
  readonly http: PathStats;
  readonly tcp: PathStats;
  /** Errors by kind, e.g. `http 503`, `http ECONNRESET`, `tcp timeout`. */
  readonly errors: Record<string, number>;
  readonly mismatches: Mismatch[];
  readonly memory: MemorySample[];
  /** Keys read back after the load, through both paths. */
  readonly finalKeysChecked: number;
  readonly evictions: number;
  readonly servicesAlive: boolean;
}

export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

function percentile(sorted: number[], p: number): string {
  if (sorted.length === 0) return '-';
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2);
}

export function formatSoakReport(r: SoakReport): string {
  const lines: string[] = [];
  const path = (name: string, s: PathStats): string => {
    const sorted = [...s.latenciesMs].sort((a, b) => a - b);
    return (
      `${name.padEnd(5)} ${String(s.ops).padStart(9)} ops  ${(s.ops / r.seconds).toFixed(0).padStart(7)} ops/s  ` +
      `reads ${s.reads} (verified ${s.verified})  writes ${s.writes}  deletes ${s.deletes}  ` +
      `latency ms p50 ${percentile(sorted, 50)} p99 ${percentile(sorted, 99)} max ${percentile(sorted, 100)}`
    );
  };
  lines.push(`soak: ${r.seconds.toFixed(1)} s, ${r.options.httpWorkers} HTTP workers, ${r.options.tcpWorkers} TCP workers × ${r.options.tcpDepth}, ${r.options.keysPerWorker} keys each`);
  lines.push(path('http', r.http));
  lines.push(path('tcp', r.tcp));
  lines.push(`total ${r.http.ops + r.tcp.ops} ops, ${((r.http.ops + r.tcp.ops) / r.seconds).toFixed(0)} ops/s`);
  const errorKinds = Object.entries(r.errors);
  lines.push(`errors: ${errorKinds.length === 0 ? 'none' : errorKinds.map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  lines.push(`store evictions: ${r.evictions}; keys read back after the load: ${r.finalKeysChecked}; services alive: ${r.servicesAlive ? 'yes' : 'NO'}`);
  lines.push('memory (resident set size, V8 heap in use):');
  lines.push('    at s   store RSS   store heap  backend RSS  backend heap  store usage   keys');
  const step = Math.max(1, Math.ceil(r.memory.length / 20));
  r.memory.forEach((m, i) => {
    if (i % step !== 0 && i !== r.memory.length - 1) return;
    lines.push(
      `  ${String(m.atSec).padStart(6)}  ${mib(m.storeRssBytes).padStart(10)}  ${mib(m.storeHeapUsedBytes).padStart(11)}  ${mib(m.backendRssBytes).padStart(11)}  ` +
        `${mib(m.backendHeapUsedBytes).padStart(12)}  ${mib(m.storeUsageBytes).padStart(11)}  ${String(m.storeKeys).padStart(5)}`,
    );
  });
  const peak = (f: (m: MemorySample) => number) => mib(Math.max(...r.memory.map(f)));
  lines.push(
    `  peak RSS: store ${peak((m) => m.storeRssBytes)}, backend ${peak((m) => m.backendRssBytes)}; peak heap in use: store ${peak((m) => m.storeHeapUsedBytes)}, backend ${peak((m) => m.backendHeapUsedBytes)}; ` +
      `peak external: store ${peak((m) => m.storeExternalBytes)}, backend ${peak((m) => m.backendExternalBytes)}`,
  );
  lines.push(`data mismatches: ${r.mismatches.length}`);
  for (const m of r.mismatches.slice(0, 20)) lines.push(`  ${m.key} via ${m.via}: expected ${m.expected}, got ${m.got}`);
  if (r.mismatches.length > 20) lines.push(`  … and ${r.mismatches.length - 20} more`);
  lines.push(r.mismatches.length === 0 && r.servicesAlive ? 'PASS' : 'FAIL');
  return lines.join('\n');
}
