import { ConfigError, loadStoreConfig, type StoreConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { startStoreService, type StoreService } from './store-service.ts';

// Entry point: config from the environment, start, and a graceful stop on SIGTERM/SIGINT
// (a second signal stops at once).
let config: StoreConfig;
try {
  config = loadStoreConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`kvstore: ${err.message}\n`);
  process.exit(1);
}

const logger = createLogger({ name: 'kvstore', level: config.logLevel });
// How long a graceful stop may take before the process leaves anyway.
const FORCE_EXIT_MS = 5000;

let service: StoreService | undefined;
let stopping = false;

// Leave by letting the event loop empty (so the async log destination flushes); the
// unref'd timer only fires if something unexpected still holds the process open.
function leave(code: number): void {
  process.exitCode = code;
  logger.flush();
  setTimeout(() => process.exit(code), 2000).unref();
}

function shutDown(s: StoreService): void {
  s.close().then(
    () => leave(0),
    (err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      s.destroy();
      leave(1);
    },
  );
}

// Installed before the service starts: the ready line can reach a supervisor (which may
// signal at once) before start-up code after it has run.
function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    logger.warn({ signal }, 'second signal: stopping now');
    service?.destroy();
    leave(1);
    return;
  }
  stopping = true;
  logger.info({ signal }, 'signal received');
  setTimeout(() => {
    logger.error({ timeoutMs: FORCE_EXIT_MS }, 'shutdown took too long: exiting');
    service?.destroy();
    leave(1);
  }, FORCE_EXIT_MS).unref();
  if (service) shutDown(service);
}
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);

try {
  service = await startStoreService(config, { logger });
  if (stopping) shutDown(service);
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  logger.fatal({ err: { message } }, `kvstore failed to start: ${message}`);
  leave(1);
}
