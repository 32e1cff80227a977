// The bench's child processes: the register every server (services.ts) and load
// generator joins, so one killAll takes them all down, and the load generators
// (kv bench, kvload) run to their end. A load generator runs in its own process group
// (spawned detached), so killing the group also takes down what it started itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../../services/cli/bench/bench-runner.ts';
import { RESP_BENCH_SCRIPT } from '../redis/resp-bench.ts';

export const root = fileURLToPath(new URL('../../', import.meta.url));

export const children = new Set<ChildProcess>();

/**
 * A detached child leads its own process group, so killing the group also takes down
 * anything it started itself (http-bench starts its own servers); any other child is
 * killed alone.
 */
export function killAll(): void {
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      c.kill('SIGKILL');
    }
  }
  children.clear();
}

/** Kills every child when this process exits or is interrupted. */
export function killChildrenOnExit(): void {
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      killAll();
      process.stderr.write(`\nbench: interrupted (${signal})\n`);
      process.exit(130);
    });
  }
}

export const log = (text: string) => process.stderr.write(`bench: ${text}\n`);

/** A shell-style rendering of a command, for the report. */
export function shellLine(env: Record<string, string>, cmd: string, args: readonly string[]): string {
  const q = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);
  return [...Object.entries(env).map(([k, v]) => `${k}=${q(v)}`), q(cmd), ...args.map(q)].join(' ');
}

export interface StoreRun {
  readonly command: string;
  readonly result: BenchResult | LoadFigures;
  /** The server's CPU time per operation over the measured window, µs (harness/process-cpu.ts); undefined without /proc. */
  readonly serverCpuUsPerOp?: number | undefined;
  /** The hypervisor's steal time during the run, ms summed over the CPUs (harness/process-cpu.ts); undefined without /proc. */
  readonly stealMs?: number | undefined;
}

/** Runs a load generator to its end (its stderr is ours), killed with the others on exit; resolves with its exit code and stdout. */
export function runToEnd(command: string, args: readonly string[]): Promise<{ code: number | null; out: string }> {
  return armed(command, args).go();
}

/**
 * Starts `command args` held at a shell's `read`: this process forks now, and the command
 * only runs (exec'd by that shell) once go() is called. A fork copies this process's page
 * tables and write-protects its memory, so every one of its threads is briefly held up
 * (shootdowns, copy-on-write faults): forked at the start of a measured phase, it would
 * show in the phase's first round trips (bench/growth-stall.ts's prober runs in this
 * process; docs/benchmarks.md#pauses-during-growth).
 */
export function armed(command: string, args: readonly string[]): { go(): Promise<{ code: number | null; out: string }> } {
  const child = spawn('/bin/sh', ['-c', 'read go && exec "$0" "$@"', command, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return {
    async go() {
      child.stdin!.end('go\n');
      const code = await exited;
      children.delete(child);
      return { code, out };
    },
  };
}

/**
 * Runs `kv bench ... --json` as a child process (its progress bar goes to our stderr);
 * with `resp`, the same load generator over RESP, for Redis (bench/redis/resp-bench.ts).
 */
export async function kvBench(args: string[], protocol: 'line' | 'resp' = 'line'): Promise<StoreRun> {
  const full = [...(protocol === 'resp' ? [RESP_BENCH_SCRIPT] : ['bin/kv.js', 'bench']), ...args, '--json'];
  const { code, out } = await runToEnd(process.execPath, full);
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

/** The figures the report reads from one load run, whichever client produced them. */
export interface LoadFigures {
  readonly opsPerSec: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly p999: number };
  readonly errors: number;
  readonly wrongReplies: number;
  /** The load generator's own CPU use, % of one core (kvload reports it): near 100 means the client was the bottleneck. */
  readonly clientCpuPct?: number;
}

/** Runs kvload to its end and parses its last stdout line, a JSON object of results. */
async function kvloadJson(binary: string, args: string[], started = armed(binary, args)): Promise<{ command: string; code: number | null; r: Record<string, number> }> {
  const { code, out } = await started.go();
  const command = shellLine({}, 'kvload', args);
  const last = out.trim().split('\n').at(-1) ?? '';
  try {
    return { command, code, r: JSON.parse(last) as Record<string, number> };
  } catch {
    throw new Error(`${command} failed (exit ${code}): ${out.slice(-500)}`);
  }
}

/**
 * One run of the C load generator kvload (an external instrument, not part of the
 * project: --kvload <path>); its last stdout line is a JSON object of results.
 */
export async function kvloadRun(binary: string, args: string[], started = armed(binary, args)): Promise<{ command: string; result: LoadFigures }> {
  const { command, code, r } = await kvloadJson(binary, args, started);
  if (code !== 0) log(`WARNING: exit ${code} (error replies) in: ${command}`);
  return {
    command,
    result: { opsPerSec: r.ops_per_sec!, latencyMs: { p50: r.p50_us! / 1000, p99: r.p99_us! / 1000, p999: r.p999_us! / 1000 }, errors: r.errors!, wrongReplies: 0, clientCpuPct: r.client_cpu_pct },
  };
}

/**
 * kvload's prefill only (-L): a SET of every key of its keyspace, pipelined, then it exits.
 * For benches that need keys written by a client that is not the bottleneck.
 */
export async function kvloadFill(binary: string, args: string[], started?: ReturnType<typeof armed>): Promise<{ command: string; seconds: number; errors: number }> {
  const fillArgs = [...args, '-L'];
  const { command, r } = await kvloadJson(binary, fillArgs, started ?? armed(binary, fillArgs));
  return { command, seconds: r.prefill_secs!, errors: r.prefill_errors! };
}

/** kvloadRun and kvloadFill, with the process started now (see armed) and run by the call returned. */
export function armedKvloadRun(binary: string, args: string[]): () => ReturnType<typeof kvloadRun> {
  const started = armed(binary, args);
  return () => kvloadRun(binary, args, started);
}
export function armedKvloadFill(binary: string, args: string[]): () => ReturnType<typeof kvloadFill> {
  const started = armed(binary, [...args, '-L']);
  return () => kvloadFill(binary, args, started);
}
