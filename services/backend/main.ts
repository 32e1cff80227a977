import { ConfigError, loadBackendConfig, type BackendConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { startBackendService, type BackendService } from './backend-service.ts';

// Entry point: config from the environment, start, and a graceful stop on SIGTERM/SIGINT
// (a second signal stops at once). Exit 0 after a graceful stop, 1 on a bad setting or
// a failed start.
let config: BackendConfig;
try {
  config = loadBackendConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`kvbackend: ${err.message}\n`);
  process.exit(1);
}

const logger = createLogger({ name: 'kvbackend', level: config.logLevel });

// Leave by letting the event loop empty (so the async log destination flushes); the
// unref'd timer only fires if something unexpected still holds the process open.
function leave(code: number): void {
  process.exitCode = code;
  logger.flush();
  setTimeout(() => process.exit(code), 2000).unref();
}

let service: BackendService | undefined;
let stopRequested: NodeJS.Signals | undefined;

function stop(signal: NodeJS.Signals): void {
  if (stopRequested) {
    logger.warn({ signal }, 'second signal: stopping now');
    service?.destroy();
    leave(1);
    return;
  }
  stopRequested = signal;
  logger.info({ signal }, 'signal received');
  if (!service) return; // still starting: stopped as soon as it is up
  service.close().then(
    () => leave(0),
    (err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      service?.destroy();
      leave(1);
    },
  );
}

// Installed before the ready line is written, so a signal right after it is handled.
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

try {
  service = await startBackendService(config, { logger });
  if (stopRequested) {
    const signal = stopRequested;
    stopRequested = undefined;
    stop(signal);
  }
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  logger.fatal({ err: { message } }, `kvbackend failed to start: ${message}`);
  leave(1);
}
