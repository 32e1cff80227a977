// The child processes of `npm run bench`: the servers (store, Redis) and the load
// generators (kv bench, kvload, bench/http-bench.ts). Each runs in its own process group
// (spawned detached), so killing the group also takes down what it started itself.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../../services/cli/bench/bench-runner.ts';
import { freePort } from '../../services/shared/free-port.ts';
import { jsonLineWithMsg, spawnUntilReady, type ReadyProcess } from './spawn-until-ready.ts';
import type { Settings } from '../bench-settings.ts';
import type { HttpBenchReport } from '../http-bench.ts';

export const root = fileURLToPath(new URL('../../', import.meta.url));

export const children = new Set<ChildProcess>();

/**
 * Children run in their own process group (spawned detached), so killing the group also
 * takes down anything they started themselves (http-bench starts its own servers).
 */
export function killAll(): void {
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // already gone
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

export interface Server {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly metricsPort?: number;
  /** The store's ready line says its client sockets go through its C add-on (STORE_NATIVE_IO). */
  readonly nativeIo?: boolean;
  readonly command: string;
  stop(): Promise<void>;
}

/** Spawns a server and resolves once `ready(line)` returns its ports (rejects if it exits first or hangs). */
export async function startServer(
  label: string,
  cmd: string,
  args: string[],
  env: Record<string, string>,
  ready: (line: string) => { port: number; metricsPort?: number; nativeIo?: boolean } | undefined,
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
    return entry ? { port: entry.port as number, metricsPort: entry.metricsPort as number | undefined, nativeIo: typeof entry.nativeIo === 'boolean' ? entry.nativeIo : undefined } : undefined;
  };
}

/**
 * A store process from this checkout (`node services/store/main.ts`, ports chosen by the
 * OS, info logs), `env` added; resolves with its ready line once it logs it.
 */
export function spawnStore(
  env: Record<string, string>,
  options: { readonly onLine?: (line: string) => void; readonly timeoutMs?: number; readonly detached?: boolean; readonly nodeArgs?: readonly string[] } = {},
): Promise<ReadyProcess<Record<string, unknown>>> {
  return spawnUntilReady({
    label: 'the store',
    command: process.execPath,
    args: [...(options.nodeArgs ?? []), 'services/store/main.ts'],
    cwd: root,
    env: { STORE_PORT: '0', STORE_METRICS_PORT: '0', LOG_LEVEL: 'info', ...env },
    ready: jsonLineWithMsg('kvstore ready'),
    ...options,
  });
}

export function startStore(): Promise<Server> {
  return startServer(
    'store',
    process.execPath,
    ['services/store/main.ts'],
    { STORE_PORT: '0', STORE_METRICS_PORT: '0', MAX_MEMORY_BYTES: String(8 * 1024 ** 3), LOG_LEVEL: 'info' },
    jsonReady('kvstore ready'),
  );
}

export function redisAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function startRedis(): Promise<Server> {
  const port = await freePort();
  return startServer('redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {}, (line) =>
    line.includes('Ready to accept connections') ? { port } : undefined,
  );
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
function runToEnd(command: string, args: readonly string[]): Promise<{ code: number | null; out: string }> {
  return armed(command, args).go();
}

/**
 * Starts `command args` held at a shell's `read`: this process forks now, and the command
 * only runs (exec'd by that shell) once go() is called. A fork copies this process's page
 * tables and write-protects its memory, so every one of its threads is briefly held up
 * (shootdowns, copy-on-write faults): forked at the start of a measured phase, it showed
 * in the phase's first round trips (bench/growth-stall.ts's prober runs in this process).
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

/** Runs `kv bench ... --json` as a child process (its progress bar goes to our stderr). */
export async function kvBench(args: string[]): Promise<StoreRun> {
  const full = ['bin/kv.js', 'bench', ...args, '--json'];
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

export interface HttpRun {
  readonly command: string;
  readonly report: HttpBenchReport;
}

/**
 * The HTTP side: bench/http-bench.ts (wrk, else autocannon) starts its own store and one server per
 * mode (the backend as shipped, bare Express, ...), run here as a child process.
 */
export async function httpBench(s: Settings): Promise<HttpRun> {
  const args = ['bench/http-bench.ts', '--duration', String(s.duration), '--warmup', String(s.warmup), '--connections', String(s.connections), '--rounds', String(s.rounds), '--json'];
  const { code, out } = await runToEnd(process.execPath, args);
  const command = shellLine({}, 'node', args);
  try {
    return { command, report: JSON.parse(out) as HttpBenchReport };
  } catch {
    throw new Error(`${command} failed (exit ${code})`);
  }
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

/** One RESP inline command to Redis on a fresh connection; resolves with the raw reply text. */
export function redisCommand(port: number, command: string): Promise<string> {
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
