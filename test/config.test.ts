import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { lineBound } from '../services/protocol/limits.ts';
import { backendSettings, loadBackendConfig, loadStoreConfig, storeSettings } from '../services/config/config.ts';
import type { StoreShard } from '../services/config/store-list.ts';
import { ConfigError } from '../services/shared/config-error.ts';
import { listen } from '../services/shared/listen.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

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
      warmupKeys: 0,
      snapshotPath: '',
      snapshotIntervalS: 0,
      nativeIo: 'auto',
      snapshotRequired: false,
      password: undefined,
      passwordFile: '',
      tlsCertFile: '',
      tlsKeyFile: '',
      tlsCaFile: '',
      tlsClientAuth: 'none',
      tls: undefined,
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
      STORE_WARMUP_KEYS: '5000',
      LOG_LEVEL: 'debug',
      MAX_VALUE_BYTES: ' 64 ',
      STORE_SNAPSHOT_PATH: join(tmpdir(), 'kvstack.snapshot'),
      STORE_SNAPSHOT_INTERVAL_S: '60',
      STORE_SNAPSHOT_REQUIRED: 'TRUE',
      STORE_NATIVE_IO: 'Off',
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
      warmupKeys: 5000,
      snapshotPath: join(tmpdir(), 'kvstack.snapshot'),
      snapshotIntervalS: 60,
      nativeIo: 'off',
      snapshotRequired: true,
      password: undefined,
      passwordFile: '',
      tlsCertFile: '',
      tlsKeyFile: '',
      tlsCaFile: '',
      tlsClientAuth: 'none',
      tls: undefined,
      logLevel: 'debug',
      maxValueBytes: 64,
    });
    expect(loadStoreConfig({ STORE_PORT: '' }).port).toBe(8765);
  });

  it('refuses a STORE_NATIVE_IO other than auto, on or off, naming the variable', () => {
    expect(() => loadStoreConfig({ STORE_NATIVE_IO: 'yes' })).toThrow(/^STORE_NATIVE_IO="?yes"? is invalid: expected one of auto, on, off/);
  });

  it('refuses snapshot settings that cannot work, naming the variable', () => {
    expect(() => loadStoreConfig({ STORE_SNAPSHOT_PATH: join(tmpdir(), 'no-such-dir', 'snap') })).toThrow(/^STORE_SNAPSHOT_PATH=".*no-such-dir.*" is invalid: expected a file in an existing directory/);
    expect(() => loadStoreConfig({ STORE_SNAPSHOT_PATH: tmpdir() })).toThrow(/^STORE_SNAPSHOT_PATH=.* is invalid: expected a file path, not a directory/);
    expect(() => loadStoreConfig({ STORE_SNAPSHOT_INTERVAL_S: '60' })).toThrow(/^STORE_SNAPSHOT_INTERVAL_S=60 is invalid: it needs STORE_SNAPSHOT_PATH/);
    expect(() => loadStoreConfig({ STORE_SNAPSHOT_INTERVAL_S: '-1' })).toThrow(/^STORE_SNAPSHOT_INTERVAL_S="-1" is invalid/);
    expect(() => loadStoreConfig({ STORE_SNAPSHOT_REQUIRED: 'yes' })).toThrow(/^STORE_SNAPSHOT_REQUIRED="yes" is invalid: expected true or false/);
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
    ['STORE_WARMUP_KEYS', '-1'],
    ['STORE_WARMUP_KEYS', '1000001'],
    ['STORE_WARMUP_KEYS', 'many'],
    ['MAX_MEMORY_BYTES', '1GB'],
    ['MAX_MEMORY_BYTES', '99999999999999999999'],
    ['EVICTION_POLICY', 'random'],
    ['MAX_CONNECTIONS', '0'],
    ['MAX_CONNECTIONS', '1e3'],
    ['IDLE_TIMEOUT_MS', '-5'],
    ['IDLE_TIMEOUT_MS', '1.5'],
    ['LOG_LEVEL', 'verbose'],
    ['MAX_VALUE_BYTES', String(512 * 1024 * 1024 + 1)],
    ['MAX_VALUE_BYTES', '0'],
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

/** The ConfigError thrown by `load`, or a failure when it does not throw one. */
function configError(load: () => unknown): ConfigError {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('no ConfigError thrown');
}

describe('settings that clash', () => {
  it('an admin port equal to the service port is refused, naming both variables (0, any free port, may repeat)', () => {
    const store = configError(() => loadStoreConfig({ STORE_METRICS_PORT: '8765' })).message;
    expect(store).toContain('STORE_METRICS_PORT=8765');
    expect(store).toContain('STORE_PORT');
    const backend = configError(() => loadBackendConfig({ PORT: '9000', BACKEND_METRICS_PORT: '9000' })).message;
    expect(backend).toContain('BACKEND_METRICS_PORT=9000');
    expect(backend).toContain('PORT');
    expect(loadStoreConfig({ STORE_PORT: '0', STORE_METRICS_PORT: '0' })).toMatchObject({ port: 0, metricsPort: 0 });
  });

  it('BODY_BUFFER_BYTES below MAX_VALUE_BYTES is refused, naming both', () => {
    const message = configError(() => loadBackendConfig({ MAX_VALUE_BYTES: '2048', BODY_BUFFER_BYTES: '2047' })).message;
    expect(message).toContain('BODY_BUFFER_BYTES=2047');
    expect(message).toContain('MAX_VALUE_BYTES=2048');
    expect(loadBackendConfig({ MAX_VALUE_BYTES: '2048', BODY_BUFFER_BYTES: '2048' }).bodyBufferBytes).toBe(2048);
  });
});

describe('loadBackendConfig', () => {
  it('takes a list of shards, and ejection settings that default to off', () => {
    const config = loadBackendConfig({ KV_STORE: 'store-0=a:1, b:2', SHARD_EJECT_AFTER: '3', SHARD_RETRY_MS: '5000' });
    expect((config.store as readonly StoreShard[]).map((s) => [s.name, s.host, s.port])).toEqual([['store-0', 'a', 1], ['b:2', 'b', 2]]);
    expect(config).toMatchObject({ shardEjectAfter: 3, shardRetryMs: 5000 });
    expect(loadBackendConfig({})).toMatchObject({ shardEjectAfter: 0, shardRetryMs: 30000 });
  });

  it('takes DNS discovery, with its refresh period and DNS server', () => {
    expect(loadBackendConfig({ KV_STORE: 'dnssrv+_kv._tcp.store.default.svc.cluster.local' })).toMatchObject({
      store: { kind: 'dnssrv', name: '_kv._tcp.store.default.svc.cluster.local' },
      storeRefreshMs: 10000,
      storeDnsServer: undefined,
    });
    expect(loadBackendConfig({ KV_STORE: 'dns+store:8765', KV_STORE_REFRESH_MS: '500', KV_STORE_DNS_SERVER: '[::1]:5353' })).toMatchObject({
      store: { kind: 'dns', host: 'store', port: 8765 },
      storeRefreshMs: 500,
      storeDnsServer: { host: '::1', port: 5353 },
    });
  });

  it('has defaults for the shutdown delay and the body limits', () => {
    expect(loadBackendConfig({})).toMatchObject({ shutdownDelayMs: 0, bodyTimeoutMs: 30000, bodyBufferBytes: 67108864, store: [{ name: '127.0.0.1:8765', host: '127.0.0.1', port: 8765 }] });
  });

  it.each([
    ['localhost:8765', { host: 'localhost', port: 8765 }],
    ['10.0.0.7:1', { host: '10.0.0.7', port: 1 }],
    ['[::1]:8765', { host: '::1', port: 8765 }],
    ['[2001:db8::7]:65535', { host: '2001:db8::7', port: 65535 }],
  ])('KV_STORE=%s is read as %j', (raw, expected) => {
    expect(loadBackendConfig({ KV_STORE: raw }).store).toEqual([{ name: raw, address: raw, ...expected }]);
  });

  it.each([
    ['SHARD_EJECT_AFTER', '-1'],
    ['SHARD_EJECT_AFTER', 'often'],
    ['SHARD_RETRY_MS', '0'],
    ['SHARD_RETRY_MS', '30s'],
    ['KV_STORE', '::1:8765'], // unbracketed IPv6: where does the address end?
    ['KV_STORE', 'fe80::1:80'],
    ['KV_STORE', '[127.0.0.1]:80'],
    ['KV_STORE', '[::1]'],
    ['KV_STORE', 'store'],
    ['KV_STORE', 'store:0'],
    ['KV_STORE', 'store:65536'],
    ['KV_STORE', 'dns+store'],
    ['KV_STORE', 'dnssrv+'],
    ['KV_STORE_REFRESH_MS', '0'],
    ['KV_STORE_REFRESH_MS', '10s'],
    ['KV_STORE_DNS_SERVER', '127.0.0.1'],
    ['KV_STORE_DNS_SERVER', '::1:53'],
    ['BACKEND_SHUTDOWN_DELAY_MS', '-1'],
    ['BACKEND_SHUTDOWN_DELAY_MS', '600001'],
    ['BODY_TIMEOUT_MS', '0'],
    ['BODY_TIMEOUT_MS', '30s'],
    ['BODY_BUFFER_BYTES', '0'],
    ['BODY_BUFFER_BYTES', '64MiB'],
    ['MAX_VALUE_BYTES', '0'],
  ])('%s=%j is refused with a message naming the variable and the value', (name, value) => {
    const message = configError(() => loadBackendConfig({ [name]: value })).message;
    expect(message).toContain(name);
    expect(message).toContain(JSON.stringify(value));
  });

  it('every setting has an env name, a default that parses, and a description', () => {
    for (const setting of Object.values(backendSettings)) {
      expect(setting.env).toMatch(/^[A-Z_]+$/);
      expect(setting.description.length).toBeGreaterThan(10);
      expect(() => (setting.parse as (raw: string, env: string) => unknown)(setting.default, setting.env)).not.toThrow();
    }
  });
});

/** Runs a service's main.ts to its exit (it must not start) and returns what it said. */
function runMain(script: string, env: Record<string, string>) {
  return spawnSync(process.execPath, [script], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000 });
}

function expectRefusedNaming(result: ReturnType<typeof runMain>, ...names: string[]): void {
  expect(result.status, result.stderr).toBe(1);
  for (const name of names) expect(result.stderr).toContain(name);
  expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  expect(result.stdout).not.toMatch(/"msg":"kv(store|backend) ready"/);
}

describe('main.ts when a listener cannot be bound: a message naming the variable, exit 1', () => {
  it('STORE_HOST / HOST that does not resolve', () => {
    expectRefusedNaming(runMain('services/store/main.ts', { STORE_HOST: 'not-a-host.invalid', STORE_PORT: '0', STORE_METRICS_PORT: '0' }), 'STORE_HOST="not-a-host.invalid"', 'does not resolve');
    expectRefusedNaming(runMain('services/backend/main.ts', { HOST: 'not-a-host.invalid', PORT: '0', BACKEND_METRICS_PORT: '0' }), 'HOST="not-a-host.invalid"', 'does not resolve');
  });

  it('a port already in use: STORE_PORT, STORE_METRICS_PORT, PORT, BACKEND_METRICS_PORT', async () => {
    const taken = createServer();
    const port = String(await listen(taken, 0, '127.0.0.1'));
    try {
      const store = { STORE_HOST: '127.0.0.1', STORE_PORT: '0', STORE_METRICS_PORT: '0' };
      expectRefusedNaming(runMain('services/store/main.ts', { ...store, STORE_PORT: port }), `STORE_PORT=${port}`, 'already in use');
      expectRefusedNaming(runMain('services/store/main.ts', { ...store, STORE_METRICS_PORT: port }), `STORE_METRICS_PORT=${port}`, 'already in use');
      const backend = { HOST: '127.0.0.1', PORT: '0', BACKEND_METRICS_PORT: '0' };
      expectRefusedNaming(runMain('services/backend/main.ts', { ...backend, PORT: port }), `PORT=${port}`, 'already in use');
      expectRefusedNaming(runMain('services/backend/main.ts', { ...backend, BACKEND_METRICS_PORT: port }), `BACKEND_METRICS_PORT=${port}`, 'already in use');
    } finally {
      taken.close();
    }
  });

  it('an admin port equal to the service port, and MAX_VALUE_BYTES=0, before anything listens', () => {
    expectRefusedNaming(runMain('services/store/main.ts', { STORE_PORT: '18999', STORE_METRICS_PORT: '18999' }), 'STORE_METRICS_PORT=18999', 'STORE_PORT');
    expectRefusedNaming(runMain('services/backend/main.ts', { KV_STORE: '::1:8765', PORT: '0', BACKEND_METRICS_PORT: '0' }), 'KV_STORE="::1:8765"', '[::1]:8765');
    // A list: the entry and its place are named.
    expectRefusedNaming(runMain('services/backend/main.ts', { KV_STORE: 'a:1,b:99999,c:3', PORT: '0', BACKEND_METRICS_PORT: '0' }), 'KV_STORE entry 2 of 3 ("b:99999")', 'port from 1 to 65535');
    // A malformed discovery entry: dns+ without a port.
    expectRefusedNaming(runMain('services/backend/main.ts', { KV_STORE: 'dns+store.test', PORT: '0', BACKEND_METRICS_PORT: '0' }), 'KV_STORE="dns+store.test"', 'needs a port');
    expectRefusedNaming(runMain('services/store/main.ts', { MAX_VALUE_BYTES: '0', STORE_PORT: '0', STORE_METRICS_PORT: '0' }), 'MAX_VALUE_BYTES="0"');
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
    expect(result.stdout).not.toContain(STORE_READY);
  });
});
