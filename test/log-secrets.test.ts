// The log scan of test/setup/log-secrets.ts is wired in: a secret given to a service and
// then logged is found, from an in-process logger and from a spawned service's stdout;
// what the scan takes in (lines, secrets) is not empty. Each test clears what it planted,
// so the scan after this file sees only what the services wrote.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBackendConfig, loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { logSink } from './helpers/backend-harness.ts';
import { capturedSoFar, findLeaks, resetCapture } from './helpers/log-secrets.ts';
import { startServiceProcess, STORE_READY, storeScript } from './helpers/service-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'kv-log-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the log scan', () => {
  it('finds a password and a token the config read, once a logger writes them', () => {
    const password = 'store password planted 0123';
    const token = 'planted-token-0123456789abcdef';
    const tokens = join(dir, 'tokens');
    writeFileSync(tokens, `write ${token}\n`);
    loadStoreConfig({ STORE_PASSWORD: password });
    loadBackendConfig({ BACKEND_TOKENS_FILE: tokens });
    const logger = createLogger({ name: 'planted', level: 'info', destination: logSink() });
    logger.info('nothing secret');
    expect(findLeaks()).toEqual([]);
    logger.info({ leaked: password }, 'a password');
    logger.warn(`a token ${token} in a message`);
    expect(findLeaks().map((l) => l.secret).sort()).toEqual([password, token].sort());
    resetCapture();
  });

  it('takes a spawned service\'s stdout and the password in its environment', async () => {
    const password = 'spawned store password 0123';
    const store = await startServiceProcess(storeScript, { STORE_PORT: '0', STORE_METRICS_PORT: '0', STORE_PASSWORD: password, STORE_WARMUP_KEYS: '0' }, STORE_READY);
    try {
      expect(capturedSoFar().lines).toBeGreaterThan(0);
      expect(capturedSoFar().secrets).toBeGreaterThan(0);
      expect(findLeaks()).toEqual([]);
    } finally {
      await store.stop();
    }
    resetCapture();
  });
});
