// The one way bench scripts start a server: the store, the backend (both from this
// checkout, or another one's with `root`) or a redis-server, each a child process that
// is ready once it says so (the services' ready line, Redis's "Ready to accept
// connections"), with its ports chosen by the OS and every child killed by killAll.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from '../../services/shared/free-port.ts';
import { STORE_NODE_FLAGS } from '../../services/store/runtime/launch-flags.ts';
import { imageTunablesFor } from '../../services/store/runtime/malloc-tuning.ts';
import { BACKEND_READY, parseReadyLine, STORE_READY, type ReadyFields } from '../../services/shared/ready-line.ts';
import { children, root, shellLine } from './processes.ts';
import { spawnUntilReady, type ReadyProcess } from './spawn-until-ready.ts';

export interface Service {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  /** Undefined for Redis, which serves no /metrics. */
  readonly metricsPort: number | undefined;
  /** The fields of the service's ready line (undefined for Redis). */
  readonly ready: ReadyFields | undefined;
  /** A shell-style rendering of how it was started, for reports. */
  readonly command: string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  alive(): boolean;
  /** SIGTERM (or `signal`), SIGKILL after `graceMs` (default 5 s); resolves with the exit code. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
  /** SIGKILL (to the process group when detached); idempotent. */
  kill(): void;
}

export interface StartOptions {
  /** Added to the environment, over the defaults. */
  readonly env?: Record<string, string>;
  /** Every stdout line of the server, also after its ready line. */
  readonly onLine?: (line: string) => void;
  /** How long it may take to be ready (default 30 s). */
  readonly timeoutMs?: number;
  /** Its own process group, so a kill also takes whatever it started. */
  readonly detached?: boolean;
}

export interface NodeServiceOptions extends StartOptions {
  /** Node options before the script (e.g. V8 flags). */
  readonly nodeArgs?: readonly string[];
  /** The checkout whose services run (default: this one). */
  readonly root?: string;
  /** Run the compiled JavaScript in the checkout's dist/ (build-dist.ts), as the image does, instead of the TypeScript sources. */
  readonly built?: boolean;
}

function track<T>(p: ReadyProcess<T>, command: string, port: number, metricsPort: number | undefined, ready: ReadyFields | undefined): Service {
  children.add(p.child);
  void p.exited.then(() => children.delete(p.child));
  return {
    child: p.child,
    pid: p.pid,
    port,
    metricsPort,
    ready,
    command,
    exited: p.exited,
    alive: p.alive,
    stop: (signal = 'SIGTERM', graceMs = 5000) => p.stop(signal, graceMs),
    kill: p.kill,
  };
}

async function startNodeService(label: string, script: string, readyMsg: string, defaults: Record<string, string>, o: NodeServiceOptions): Promise<Service> {
  // The caller's variables first, so a report's command line shows them in the caller's order.
  const env: Record<string, string> = { ...o.env };
  for (const [name, value] of Object.entries(defaults)) env[name] ??= value;
  const args = o.built ? ['--enable-source-maps', ...(o.nodeArgs ?? []), script.replace(/^services\/(.*)\.ts$/, 'dist/$1.js')] : [...(o.nodeArgs ?? []), script];
  const p = await spawnUntilReady({
    label,
    command: process.execPath,
    args,
    cwd: o.root ?? root,
    env,
    ready: (line) => parseReadyLine(line, readyMsg),
    onLine: o.onLine,
    timeoutMs: o.timeoutMs,
    detached: o.detached,
  });
  return track(p, shellLine(env, 'node', args), p.ready.port, p.ready.metricsPort, p.ready);
}

/**
 * The environment a harness's store starts with, under the caller's and over `env` (this
 * process's): info logs, ports chosen by the OS; compiled (`built`), as the image runs it,
 * with the image's GLIBC_TUNABLES too unless `env` sets its own (one malloc arena from the
 * process's start, not only after mallopt).
 */
export function storeEnvDefaults(built: boolean, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return { STORE_PORT: '0', STORE_METRICS_PORT: '0', LOG_LEVEL: 'info', ...(built ? imageTunablesFor(env) : {}) };
}

/** A store (`node services/store/main.ts`; `dist/store/main.js` when `built`), `env` over storeEnvDefaults. */
export function startStore(o: NodeServiceOptions = {}): Promise<Service> {
  // The image's launch flags first: a caller's own nodeArgs come after, and V8 takes the last.
  const nodeArgs = [...STORE_NODE_FLAGS, ...(o.nodeArgs ?? [])];
  return startNodeService('the store', 'services/store/main.ts', STORE_READY, storeEnvDefaults(o.built ?? false), { ...o, nodeArgs });
}

/** A backend (`node services/backend/main.ts`) on 127.0.0.1, info logs, ports chosen by the OS; `env` names its stores (KV_STORE). */
export function startBackend(o: NodeServiceOptions = {}): Promise<Service> {
  return startNodeService('the backend', 'services/backend/main.ts', BACKEND_READY, { HOST: '127.0.0.1', PORT: '0', BACKEND_METRICS_PORT: '0', LOG_LEVEL: 'info' }, o);
}

export function redisAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface RedisOptions extends Omit<StartOptions, 'env'> {
  /** Arguments after the port and the bind address (default: no persistence, `--save '' --appendonly no`). */
  readonly args?: readonly string[];
}

/** A redis-server on 127.0.0.1, a port chosen here. */
export async function startRedis(o: RedisOptions = {}): Promise<Service> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', ...(o.args ?? ['--save', '', '--appendonly', 'no'])];
  const p = await spawnUntilReady({
    label: 'redis-server',
    command: 'redis-server',
    args,
    cwd: root,
    ready: (line) => (line.includes('Ready to accept connections') ? true : undefined),
    onLine: o.onLine,
    timeoutMs: o.timeoutMs,
    detached: o.detached,
  });
  return track(p, shellLine({}, 'redis-server', args), port, undefined, undefined);
}
