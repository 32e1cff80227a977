import { fileURLToPath } from 'node:url';
import { spawnUntilReady, type ReadyProcess } from '../../bench/harness/spawn-until-ready.ts';
import { parseLogLine, parseReadyLine } from '../../services/shared/ready-line.ts';
import { STORE_NODE_FLAGS } from '../../services/store/runtime/launch-flags.ts';
import { captureLog, recordEnvSecrets } from './log-secrets.ts';

export { BACKEND_READY, STORE_READY } from '../../services/shared/ready-line.ts';

export { freePort } from '../../services/shared/free-port.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  readonly child: ReadyProcess<unknown>['child'];
  readonly pid: number;
  /** Every JSON log line the service wrote to stdout so far. */
  readonly logs: Record<string, unknown>[];
  /** Sends a signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  readonly exited: Promise<number | null>;
}

// A service that ignores SIGTERM this long is a failure the test should see as such.
const STOP_GRACE_MS = 60_000;

/**
 * Starts `node <script>` from the repo root with `env` added to the environment, and
 * resolves once it logs the JSON line whose msg is `readyMsg` (rejects if it exits first
 * or is not ready within `timeoutMs`).
 */
export async function startServiceProcess(
  script: string,
  env: Record<string, string>,
  readyMsg: string,
  timeoutMs?: number,
): Promise<ServiceProcess> {
  const logs: Record<string, unknown>[] = [];
  recordEnvSecrets(env);
  const p = await spawnUntilReady({
    label: script,
    command: process.execPath,
    args: script === storeScript ? [...STORE_NODE_FLAGS, script] : [script],
    cwd: root,
    env: { LOG_LEVEL: 'info', ...env },
    ready: (line) => parseReadyLine(line, readyMsg),
    onLine: (line) => {
      captureLog(line);
      const entry = parseLogLine(line);
      if (entry) logs.push(entry);
    },
    timeoutMs,
  });
  return { child: p.child, pid: p.pid, logs, exited: p.exited, stop: (signal = 'SIGTERM') => p.stop(signal, STOP_GRACE_MS) };
}

export const storeScript = 'services/store/main.ts';
export const backendScript = 'services/backend/main.ts';
