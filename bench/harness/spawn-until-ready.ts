import { spawn, type ChildProcess } from 'node:child_process';

// The one way tests and benchmarks start a server process: spawn it, read its stdout line
// by line until `ready` recognises its ready line (for the services, parseReadyLine of
// services/shared/ready-line.ts), and give up (killing it) after a deadline, so a service
// that hangs before it is ready fails the caller instead of hanging it. Used by
// test/helpers/service-process.ts and bench/harness/processes.ts.

export interface SpawnUntilReadyOptions<T> {
  /** Names the process in errors. */
  readonly label: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** Added to process.env. */
  readonly env?: Record<string, string>;
  /** Returns a value for the ready line, undefined for any other line. */
  readonly ready: (line: string) => T | undefined;
  /** Every stdout line, including those after the ready line (e.g. to keep logs). */
  readonly onLine?: (line: string) => void;
  /** Default 30 s. */
  readonly timeoutMs?: number;
  /** Own process group, so kill() takes whatever it started too. */
  readonly detached?: boolean;
}

export interface ReadyProcess<T> {
  readonly child: ChildProcess;
  readonly pid: number;
  /** What `ready` returned for the ready line. */
  readonly ready: T;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  alive(): boolean;
  /** Sends `signal` (SIGTERM by default), SIGKILL after `graceMs`, and resolves with the exit code. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
  /** SIGKILL (to the group when detached); idempotent. */
  kill(): void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export function spawnUntilReady<T>(options: SpawnUntilReadyOptions<T>): Promise<ReadyProcess<T>> {
  const { label, ready, onLine, detached = false } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let running = true;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running = false;
      resolve(code);
    }),
  );
  const kill = (): void => {
    if (!running) return;
    try {
      if (detached) process.kill(-child.pid!, 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      // already gone
    }
  };
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-10_000)));

  return new Promise((resolve, reject) => {
    let found = false;
    const fail = (why: string): void => {
      if (found) return;
      found = true;
      clearTimeout(deadline);
      kill();
      reject(new Error(`${label} ${why}${stderr ? `:\n${stderr}` : ''}`));
    };
    const deadline = setTimeout(() => fail(`was not ready within ${timeoutMs} ms`), timeoutMs);
    deadline.unref();
    child.on('error', (err) => fail(`could not start (${err.message})`));
    void exited.then((code) => fail(`exited with ${code ?? child.signalCode} before it was ready`));

    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      // After the ready line the pipe is still drained (a full pipe would block the child).
      if (found && !onLine) return;
      partial += chunk.toString('utf8');
      let lf: number;
      while ((lf = partial.indexOf('\n')) !== -1) {
        const line = partial.slice(0, lf);
        partial = partial.slice(lf + 1);
        onLine?.(line);
        if (found) continue;
        const value = ready(line);
        if (value === undefined) continue;
        found = true;
        clearTimeout(deadline);
        resolve({
          child,
          pid: child.pid!,
          ready: value,
          exited,
          alive: () => running,
          kill,
          async stop(signal = 'SIGTERM', graceMs = 5000) {
            if (running) child.kill(signal);
            const timer = setTimeout(kill, graceMs);
            const code = await exited;
            clearTimeout(timer);
            return code;
          },
        });
      }
    });
  });
}
