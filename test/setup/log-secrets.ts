// Runs before every test file (vitest.config.ts setupFiles): tees every log line the
// in-process services write and records every secret they are given, and after the
// file's own last hook fails it if any line holds any of those secrets. Spawned services
// are fed in by test/helpers/service-process.ts. See test/helpers/log-secrets.ts.
import { afterAll, vi } from 'vitest';
import { captureLog, capturedSoFar, findLeaks, recordSecret, recordTokens, resetCapture } from '../helpers/log-secrets.ts';

vi.mock('../../services/shared/logger.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../services/shared/logger.ts')>();
  const { pino } = await import('pino');
  const { TurnBatchedDestination } = await import('../../services/shared/turn-batched-destination.ts');
  return {
    ...real,
    createLogger(options: Parameters<typeof real.createLogger>[0]) {
      // A service the test keeps silent still logs, at every level, to the scan only: a
      // secret logged at debug or trace is found too.
      if (options.level === 'silent') return real.createLogger({ ...options, level: 'trace', destination: { write: captureLog } });
      if (options.destination === undefined) {
        // createLogger's own default, written through (the same object, so its type is as without the scan).
        const inner = new TurnBatchedDestination(pino.destination({ sync: false }));
        const write = inner.write.bind(inner);
        inner.write = (chunk: string) => {
          captureLog(chunk);
          return write(chunk);
        };
        return real.createLogger({ ...options, destination: inner });
      }
      const inner = options.destination;
      const tee = {
        write(chunk: string) {
          captureLog(chunk);
          return inner.write(chunk);
        },
        flush: (cb?: (err?: Error) => void) => (inner as { flush?: (cb?: (err?: Error) => void) => void }).flush?.(cb) ?? cb?.(),
        flushSync: () => (inner as { flushSync?: () => void }).flushSync?.(),
      };
      return real.createLogger({ ...options, destination: tee });
    },
  };
});

vi.mock('../../services/shared/secret.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../services/shared/secret.ts')>();
  class Secret extends real.Secret {
    constructor(value: string) {
      super(value);
      recordSecret(value);
    }
  }
  return { ...real, Secret };
});

vi.mock('../../services/config/token-file.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../services/config/token-file.ts')>();
  const { readFileSync } = await import('node:fs');
  return {
    ...real,
    parseTokens(text: string, path: string, env: string) {
      recordTokens(text);
      return real.parseTokens(text, path, env);
    },
    readTokensFile(path: string, env: string) {
      try {
        recordTokens(readFileSync(path, 'utf8'));
      } catch {
        // unreadable: the real reader says so
      }
      return real.readTokensFile(path, env);
    },
  };
});

afterAll(() => {
  const leaks = findLeaks();
  const { lines, secrets } = capturedSoFar();
  resetCapture();
  if (leaks.length === 0) return;
  const shown = leaks.slice(0, 5).map((l) => `  ${JSON.stringify(l.secret.slice(0, 12))}… in: ${l.line.slice(0, 300)}`);
  throw new Error(`a service logged a secret it was given (${leaks.length} of ${lines} log lines, ${secrets} secrets looked for):\n${shown.join('\n')}`);
});
