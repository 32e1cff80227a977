import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, lineBound, loadStoreConfig, storeSettings } from '../services/shared/config.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

describe('loadStoreConfig', () => {
  it('has the defaults of SPEC §1 and §3', () => {
    expect(loadStoreConfig({})).toEqual({
      host: '127.0.0.1',
      port: 8765,
      metricsPort: 8766,
      maxMemoryBytes: 268435456,
      evictionPolicy: 'lru',
      maxConnections: 10000,
      idleTimeoutMs: 300000,
      outputStallTimeoutMs: 30000,
      logLevel: 'info',
      maxValueBytes: 1048576,
    });
    expect(lineBound(1048576)).toBe(1048576 + 512);
  });

  it('reads every variable, and an empty one means the default', () => {
    const config = loadStoreConfig({
      STORE_HOST: '0.0.0.0',
      STORE_PORT: '9000',
      STORE_METRICS_PORT: '9001',
      MAX_MEMORY_BYTES: '1024',
      EVICTION_POLICY: 'NoEviction',
      MAX_CONNECTIONS: '5',
      IDLE_TIMEOUT_MS: '0',
      OUTPUT_STALL_TIMEOUT_MS: '250',
      LOG_LEVEL: 'debug',
      MAX_VALUE_BYTES: ' 64 ',
    });
    expect(config).toEqual({
      host: '0.0.0.0',
      port: 9000,
      metricsPort: 9001,
      maxMemoryBytes: 1024,
      evictionPolicy: 'noeviction',
      maxConnections: 5,
      idleTimeoutMs: 0,
      outputStallTimeoutMs: 250,
      logLevel: 'debug',
      maxValueBytes: 64,
    });
    expect(loadStoreConfig({ STORE_PORT: '' }).port).toBe(8765);
  });

  it('is frozen', () => {
    const config = loadStoreConfig({}, { port: 0 });
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('overrides win over the environment', () => {
    expect(loadStoreConfig({ STORE_PORT: '9000' }, { port: 0, maxConnections: 2 })).toMatchObject({ port: 0, maxConnections: 2 });
  });

  it.each([
    ['STORE_PORT', 'abc'],
    ['STORE_PORT', '65536'],
    ['STORE_PORT', '-1'],
    ['STORE_METRICS_PORT', '80.5'],
    ['STORE_HOST', 'a host'],
    ['STORE_HOST', 'http://x'],
    ['MAX_MEMORY_BYTES', '0'],
    ['MAX_MEMORY_BYTES', '1GB'],
    ['MAX_MEMORY_BYTES', '99999999999999999999'],
    ['EVICTION_POLICY', 'random'],
    ['MAX_CONNECTIONS', '0'],
    ['MAX_CONNECTIONS', '1e3'],
    ['IDLE_TIMEOUT_MS', '-5'],
    ['IDLE_TIMEOUT_MS', '1.5'],
    ['LOG_LEVEL', 'verbose'],
    ['MAX_VALUE_BYTES', String(512 * 1024 * 1024 + 1)],
  ])('%s=%j is refused with a message naming the variable and the value', (name, value) => {
    let error: unknown;
    try {
      loadStoreConfig({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(name);
    expect((error as Error).message).toContain(JSON.stringify(value.trim()));
  });

  it('every setting has an env name, a default that parses, and a description', () => {
    for (const setting of Object.values(storeSettings)) {
      expect(setting.env).toMatch(/^[A-Z_]+$/);
      expect(setting.description.length).toBeGreaterThan(10);
      expect(() => (setting.parse as (raw: string, env: string) => unknown)(setting.default, setting.env)).not.toThrow();
    }
  });
});

describe('store main.ts with a bad configuration', () => {
  it.each([
    ['MAX_MEMORY_BYTES', 'lots'],
    ['EVICTION_POLICY', 'fifo'],
  ])('%s=%s: prints a clear message naming the variable and exits 1', (name, value) => {
    const result = spawnSync(process.execPath, ['services/store/main.ts'], {
      cwd: root,
      env: { ...process.env, STORE_PORT: '0', STORE_METRICS_PORT: '0', [name]: value },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(name);
    expect(result.stderr).toContain(value);
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(result.stdout).not.toContain('kvstore ready');
  });
});
