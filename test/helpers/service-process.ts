import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export { freePort } from '../../services/shared/free-port.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Every JSON log line the service wrote to stdout so far. */
  readonly logs: Record<string, unknown>[];
  /** Sends a signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  readonly exited: Promise<number | null>;
}

/**
 * Starts `node <script>` from the repo root with `env` added to the environment, and
 * resolves once it logs the JSON line whose msg is `readyMsg` (rejects if it exits first).
 */
export function startServiceProcess(script: string, env: Record<string, string>, readyMsg: string): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [script], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const service: ServiceProcess = {
    child,
    pid: child.pid!,
    logs,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  return new Promise((resolve, reject) => {
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      partial += chunk.toString('utf8');
      let lf: number;
      while ((lf = partial.indexOf('\n')) !== -1) {
        const line = partial.slice(0, lf);
        partial = partial.slice(lf + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === readyMsg) resolve(service);
        } catch {
          // not JSON: ignore (the services log only JSON; this guards against stray output)
        }
      }
    });
    child.stderr!.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-10_000);
    });
    void exited.then((code) => reject(new Error(`${script} exited with ${code} before it was ready:\n${stderr}`)));
  });
}

export const storeScript = 'services/store/main.ts';
export const backendScript = 'services/backend/main.ts';
