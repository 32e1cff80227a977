import { ConfigError, loadStoreConfig, type StoreConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { startStoreService } from './store-service.ts';

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

try {
  const service = await startStoreService(config, { logger });
  let stopping = false;
  // Leave by letting the event loop empty (so the async log destination flushes); the
  // unref'd timer only fires if something unexpected still holds the process open.
  const leave = (code: number): void => {
    process.exitCode = code;
    logger.flush();
    setTimeout(() => process.exit(code), 2000).unref();
  };
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: stopping now');
      service.destroy();
      leave(1);
      return;
    }
    stopping = true;
    logger.info({ signal }, 'signal received');
    // Whatever happens, the process is gone a few seconds after the signal.
    setTimeout(() => {
      logger.error('shutdown took too long: exiting');
      service.destroy();
      leave(1);
    }, 5000).unref();
    service.close().then(
      () => leave(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        service.destroy();
        leave(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  logger.fatal({ err: { message } }, `kvstore failed to start: ${message}`);
  logger.flush();
  process.exitCode = 1;
}
