import { ConfigError } from './config-error.ts';
import { createLogger, type LogLevel, type Logger } from './logger.ts';

export interface RunnableService {
  /** Drains and stops; resolves when everything is closed. */
  close(): Promise<void>;
  /** Stops at once. */
  destroy(): void;
  /** Reads its files again (SIGHUP), keeping its connections. */
  reload?(): void;
}

export interface RunServiceOptions<C extends { readonly logLevel: LogLevel }, S extends RunnableService> {
  readonly name: string;
  readonly loadConfig: (env: NodeJS.ProcessEnv) => C;
  readonly start: (config: C, logger: Logger) => Promise<S>;
  /** How long a graceful stop may take before the process leaves anyway (default FORCE_EXIT_MS). */
  readonly forceExitMs?: (config: C) => number;
}

/** How long a graceful stop may take before the process leaves anyway. */
const FORCE_EXIT_MS = 5000;

/**
 * The entry point both services share: config from the environment (a bad setting
 * prints its message and exits 1), start, and a graceful stop on SIGTERM/SIGINT that
 * exits 0 (a second signal, or a stop past FORCE_EXIT_MS, stops at once with 1).
 * A service that can reload its files gets SIGHUP once it has started (before, SIGHUP
 * ends the process, as it does one without a reload).
 */
export async function runService<C extends { readonly logLevel: LogLevel }, S extends RunnableService>({
  name,
  loadConfig,
  start,
  forceExitMs = () => FORCE_EXIT_MS,
}: RunServiceOptions<C, S>): Promise<void> {
  let config: C;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${name}: ${err.message}\n`);
    process.exit(1);
  }
  const logger = createLogger({ name, level: config.logLevel });

  // Leave by letting the event loop empty (so the async log destination flushes); the
  // unref'd timer only fires if something unexpected still holds the process open.
  const leave = (code: number): void => {
    process.exitCode = code;
    logger.flush();
    setTimeout(() => process.exit(code), 2000).unref();
  };

  let service: S | undefined;
  let stopping = false;
  const shutDown = (s: S): void => {
    s.close().then(
      () => leave(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        s.destroy();
        leave(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: stopping now');
      service?.destroy();
      leave(1);
      return;
    }
    stopping = true;
    logger.info({ signal }, 'signal received');
    const timeoutMs = forceExitMs(config);
    setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown took too long: exiting');
      service?.destroy();
      leave(1);
    }, timeoutMs).unref();
    if (service) shutDown(service);
  };
  // Installed before the service starts: the ready line can reach a supervisor (which
  // may signal at once) before the code after start() has run.
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  try {
    service = await start(config, logger);
    if (stopping) shutDown(service);
    const started = service;
    if (started.reload) {
      process.on('SIGHUP', () => {
        logger.info({ signal: 'SIGHUP' }, 'signal received: reloading');
        started.reload!();
      });
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // A setting that cannot work (a port in use, a host that does not resolve) reads like a bad value.
    if (err instanceof ConfigError) process.stderr.write(`${name}: ${message}\n`);
    logger.fatal({ err: { message } }, `${name} failed to start: ${message}`);
    leave(1);
  }
}
