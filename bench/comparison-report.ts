// The printed report of `npm run bench`: one table of the store rounds and memory, the
// HTTP table, and every command line that produced a figure.
import type { MemoryResult } from './bench-memory.ts';
import type { StoreRun } from './harness/processes.ts';
import type { HttpBenchReport } from './http-bench-report.ts';
import type { Settings } from './bench-settings.ts';
import { median, medianBy } from './harness/median.ts';

export const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !b ? '—' : `${(a / b).toFixed(2)}x`);

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('   ')).join('\n');
}

/** One depth's runs of each system, round by round (no Redis runs without Redis). */
export interface DepthRuns {
  readonly depth: number;
  readonly kvstack: readonly StoreRun[];
  readonly redis: readonly StoreRun[];
}

/** The HTTP benchmark's report and the command that made it. */
export interface HttpRun {
  readonly command: string;
  readonly report: HttpBenchReport;
}

/** The run with the median ops/s: the figure reported for a system at a depth. */
export const medianRun = (runs: readonly StoreRun[]): StoreRun | undefined => medianBy(runs, (x) => x.result.opsPerSec);

/** kvstack's ops/s over Redis's in each round, in order; NaN for a round whose Redis run did nothing. */
const ratiosByRound = (d: DepthRuns): number[] =>
  d.redis.map((r, i) => (r.result.opsPerSec > 0 && d.kvstack[i] !== undefined ? d.kvstack[i].result.opsPerSec / r.result.opsPerSec : NaN));

/**
 * kvstack's ops/s over Redis's, round by round (the two runs of a round are back to back),
 * and their median and range; undefined without Redis runs. On a shared virtual machine
 * two runs of the same server a few seconds apart can differ by a quarter, so the ratio of
 * the two medians can be set by one system's unlucky rounds; the median of the rounds'
 * own ratios compares each kvstack run with the Redis run made next to it.
 */
export function roundRatios(d: DepthRuns): { readonly each: readonly number[]; readonly median: number; readonly min: number; readonly max: number } | undefined {
  const each = ratiosByRound(d).filter((x) => !Number.isNaN(x));
  if (each.length === 0) return undefined;
  return { each, median: median(each)!, min: Math.min(...each), max: Math.max(...each) };
}

/**
 * A round is quiet when neither of its runs lost more than this share of the machine's CPU
 * time (the CPUs times the run's measured seconds) to the hypervisor. Steal inflates a
 * server's CPU per operation and cuts its ops/s (docs/benchmarks.md#the-machine-and-the-tools),
 * and it comes and goes within seconds, so one system's run can be hit while
 * the other's is not; the quiet rounds compare the servers with the machine's own noise
 * mostly left out. Both runs of a round must be quiet: the choice does not look at either
 * server's result.
 */
export const QUIET_STEAL_SHARE = 0.015;

/** The rounds of `d` whose two runs each had at most `stealBudgetMs` of steal (none when a run has no steal figure). */
export function quietRounds(d: DepthRuns, stealBudgetMs: number): DepthRuns {
  const quiet = (x: StoreRun | undefined) => x?.stealMs !== undefined && x.stealMs <= stealBudgetMs;
  const keep = d.redis.map((r, i) => quiet(r) && quiet(d.kvstack[i]));
  return { depth: d.depth, kvstack: d.kvstack.filter((_, i) => keep[i]), redis: d.redis.filter((_, i) => keep[i]) };
}

/** The steal a run may have had for its round to be quiet: QUIET_STEAL_SHARE of `cpus` CPUs for `seconds`, in ms. */
export const quietStealBudgetMs = (cpus: number, seconds: number): number => QUIET_STEAL_SHARE * cpus * seconds * 1000;

export interface ReportInput {
  readonly settings: Settings;
  readonly cpus: number;
  readonly client: string;
  readonly depths: readonly DepthRuns[];
  readonly memory: { readonly kvstack: MemoryResult; readonly redis?: MemoryResult } | undefined;
  readonly http: HttpRun | undefined;
  readonly commands: readonly string[];
  /** The store's client sockets went through its C add-on (its ready line); undefined: not known. */
  readonly storeNativeIo?: boolean;
}

export function renderReport({ settings: s, cpus, client, depths, memory, http, commands, storeNativeIo }: ReportInput): string {
  const rows: string[][] = [['', 'kvstack', 'Redis', 'kvstack/Redis']];
  for (const runs of depths) {
    const { depth: d, kvstack: kvstackRuns, redis: redisRuns } = runs;
    const k = medianRun(kvstackRuns)!.result;
    const r = medianRun(redisRuns)?.result;
    const cpu = { kvstack: median(kvstackRuns.map((x) => x.serverCpuUsPerOp)), redis: median(redisRuns.map((x) => x.serverCpuUsPerOp)) };
    const stealMs = { kvstack: median(kvstackRuns.map((x) => x.stealMs)), redis: median(redisRuns.map((x) => x.stealMs)) };
    rows.push([`depth ${d}: ops/s`, fmt(k.opsPerSec), fmt(r?.opsPerSec), ratio(k.opsPerSec, r?.opsPerSec)]);
    const paired = roundRatios(runs);
    if (paired !== undefined && paired.each.length > 1) {
      rows.push([`depth ${d}: ops/s, median of the rounds' ratios`, '', '', `${paired.median.toFixed(2)}x (${paired.min.toFixed(2)}-${paired.max.toFixed(2)})`]);
    }
    if (cpu.kvstack !== undefined) rows.push([`depth ${d}: server CPU µs/op`, fmt(cpu.kvstack, 2), fmt(cpu.redis, 2), ratio(cpu.kvstack, cpu.redis)]);
    if (paired !== undefined && paired.each.length > 1 && stealMs.kvstack !== undefined) {
      const quiet = quietRounds(runs, quietStealBudgetMs(cpus, s.duration));
      const q = roundRatios(quiet);
      const of = `${quiet.redis.length} of ${paired.each.length} rounds`;
      rows.push([`depth ${d}: ops/s, quiet rounds' ratios (${of})`, '', '', q === undefined ? '—' : `${q.median.toFixed(2)}x (${q.min.toFixed(2)}-${q.max.toFixed(2)})`]);
      const qk = median(quiet.kvstack.map((x) => x.serverCpuUsPerOp));
      const qr = median(quiet.redis.map((x) => x.serverCpuUsPerOp));
      if (qk !== undefined) rows.push([`depth ${d}: server CPU µs/op, quiet rounds`, fmt(qk, 2), fmt(qr, 2), ratio(qk, qr)]);
    }
    const kc = 'clientCpuPct' in k ? k.clientCpuPct : undefined;
    if (kc !== undefined) rows.push([`depth ${d}: client CPU %`, fmt(kc), fmt(r && 'clientCpuPct' in r ? r.clientCpuPct : undefined), '']);
    if (stealMs.kvstack !== undefined) rows.push([`depth ${d}: machine steal ms per run`, fmt(stealMs.kvstack), fmt(stealMs.redis), '']);
    for (const [name, key] of [['p50', 'p50'], ['p99', 'p99'], ['p99.9', 'p999']] as const) {
      rows.push([`depth ${d}: ${name} ms`, fmt(k.latencyMs[key], 3), fmt(r?.latencyMs[key], 3), ratio(k.latencyMs[key], r?.latencyMs[key])]);
    }
    rows.push([`depth ${d}: errors / wrong`, `${k.errors} / ${k.wrongReplies}`, r ? `${r.errors} / ${r.wrongReplies}` : '—', '']);
  }
  if (memory) {
    rows.push([`memory: RSS bytes/key (${fmt(s.memoryKeys)} keys)`, fmt(memory.kvstack.bytesPerKey), fmt(memory.redis?.bytesPerKey), ratio(memory.kvstack.bytesPerKey, memory.redis?.bytesPerKey)]);
    rows.push(['memory: empty process RSS MiB', fmt(memory.kvstack.baselineBytes / 2 ** 20, 1), fmt(memory.redis && memory.redis.baselineBytes / 2 ** 20, 1), '']);
  }
  const lines = [
    '',
    `kvstack benchmark — ${s.connections} connections, GET:SET 9:1, ${s.valueSize}-byte values, ${fmt(s.keyspace)} keys, ${s.duration} s per run, same client (${client}) for both`,
    `median of ${s.rounds} interleaved round${s.rounds === 1 ? '' : 's'} per depth; a round is a kvstack run and a Redis run back to back, and "median of the rounds' ratios" (with their range) compares each kvstack run with the Redis run next to it`,
    `${cpus} CPUs, Node ${process.version}; the servers and the client share the machine.${storeNativeIo === undefined ? '' : storeNativeIo ? ' The store\'s client sockets went through its C add-on (STORE_NATIVE_IO).' : ' The store\'s client sockets went through Node\'s socket I/O (STORE_NATIVE_IO=off, or the add-on not built).'}`,
    `server CPU µs/op: the server process's CPU time (every thread) over the measured window / its operations (median of the rounds); client CPU %: the load generator's, of one core; machine steal: the time a virtual machine's hypervisor took its CPUs away during a run (/proc/stat; medians); quiet rounds: those in which neither run had more steal than ${QUIET_STEAL_SHARE * 100}% of the machine's CPU time over the measured seconds (${fmt(quietStealBudgetMs(cpus, s.duration))} ms here).`,
    '',
    table(rows),
  ];
  const withRounds = depths.filter((d) => d.redis.length > 1);
  if (withRounds.length > 0) {
    lines.push('', ...withRounds.map((d) => `depth ${d.depth}: kvstack/Redis ops/s per round ${ratiosByRound(d).map((x) => (Number.isNaN(x) ? '—' : `${x.toFixed(2)}x`)).join(', ')}`));
    // A round whose two runs had very different steal says more about the machine than the servers.
    for (const d of withRounds) {
      if (d.kvstack.every((k) => k.serverCpuUsPerOp === undefined)) continue;
      const round = (k: StoreRun, r: StoreRun) => `${fmt(k.serverCpuUsPerOp, 2)}/${fmt(r.serverCpuUsPerOp, 2)} µs (steal ${fmt(k.stealMs)}/${fmt(r.stealMs)} ms)`;
      lines.push(`depth ${d.depth}: server CPU per op, kvstack/Redis, per round ${d.redis.map((r, i) => round(d.kvstack[i]!, r)).join(', ')}`);
    }
  }
  if (memory) {
    lines.push('', `memory: (RSS after loading every key − RSS after the first ${fmt(memory.kvstack.firstKeys)}) / the keys between, via ${memory.kvstack.method}; ${memory.kvstack.note}${memory.redis ? `; Redis ${memory.redis.note}` : ''}`);
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
  return lines.join('\n');
}
