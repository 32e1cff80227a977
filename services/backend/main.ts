import { ConfigError, loadBackendConfig, type BackendConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { startBackendService } from './backend-service.ts';

// Entry point: config from the environment, start, and a graceful stop on SIGTERM/SIGINT
// (a second signal stops at once).
let config: BackendConfig;
try {
  config = loadBackendConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`kvbackend: ${err.message}\n`);
  process.exit(1);
}

const logger = createLogger({ name: 'kvbackend', level: config.logLevel });

try {
  const service = await startBackendService(config, { logger });
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
  logger.fatal({ err: { message } }, `kvbackend failed to start: ${message}`);
  logger.flush();
  process.exitCode = 1;
}
