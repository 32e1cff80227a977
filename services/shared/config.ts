// Configuration is read once at start-up from an env object (never process.env at
// import time), validated, and frozen. Each setting lives in one table with its
// default and meaning; the README's configuration table is checked against these.

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type EvictionPolicy = 'lru' | 'noeviction';

export interface Setting<T> {
  readonly env: string;
  readonly default: string;
  readonly description: string;
  readonly parse: (raw: string, env: string) => T;
}

type Env = Record<string, string | undefined>;

function fail(env: string, raw: string, expected: string): never {
  throw new ConfigError(`${env}=${JSON.stringify(raw)} is invalid: expected ${expected}`);
}

export function integer(min: number, max: number) {
  return (raw: string, env: string): number => {
    if (!/^\d+$/.test(raw)) fail(env, raw, `an integer from ${min} to ${max}`);
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min || n > max) fail(env, raw, `an integer from ${min} to ${max}`);
    return n;
  };
}

export function oneOf<const T extends string>(...values: T[]) {
  return (raw: string, env: string): T => {
    const v = raw.toLowerCase();
    if (!(values as string[]).includes(v)) fail(env, raw, `one of ${values.join(', ')}`);
    return v as T;
  };
}

export function host(raw: string, env: string): string {
  // A hostname or an IP literal; no scheme, no port, no spaces.
  if (!/^[A-Za-z0-9.\-:_[\]]+$/.test(raw)) fail(env, raw, 'a hostname or IP address');
  return raw;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export function hostPort(raw: string, env: string): HostPort {
  const m = /^(.+):(\d+)$/.exec(raw);
  if (!m) fail(env, raw, 'host:port');
  const port = Number(m[2]);
  if (port < 1 || port > 65535) fail(env, raw, 'host:port with a port from 1 to 65535');
  return Object.freeze({ host: host(m[1]!.replace(/^\[(.*)\]$/, '$1'), env), port });
}

const port = integer(0, 65535);
const logLevel = oneOf<LogLevel>('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent');

export const commonSettings = {
  logLevel: { env: 'LOG_LEVEL', default: 'info', description: 'pino log level: fatal, error, warn, info, debug, trace or silent.', parse: logLevel },
  maxValueBytes: { env: 'MAX_VALUE_BYTES', default: '1048576', description: 'Largest value accepted, in bytes. The store\'s line bound is this plus 512; the backend answers 413 above it.', parse: integer(0, 512 * 1024 * 1024) },
} satisfies Record<string, Setting<unknown>>;

export const storeSettings = {
  host: { env: 'STORE_HOST', default: '127.0.0.1', description: 'Address the store (and its admin port) binds. The protocol has no authentication: listening on all interfaces is an explicit choice.', parse: host },
  port: { env: 'STORE_PORT', default: '8765', description: 'TCP port of the line protocol.', parse: port },
  metricsPort: { env: 'STORE_METRICS_PORT', default: '8766', description: 'Admin HTTP port of the store: /metrics, /livez, /readyz, /healthz.', parse: port },
  maxMemoryBytes: { env: 'MAX_MEMORY_BYTES', default: '268435456', description: 'Cap on USAGE (key bytes + value bytes); never passed.', parse: integer(1, Number.MAX_SAFE_INTEGER) },
  evictionPolicy: { env: 'EVICTION_POLICY', default: 'lru', description: '`lru` evicts least recently used keys to make room; `noeviction` answers `ERROR out of memory`.', parse: oneOf<EvictionPolicy>('lru', 'noeviction') },
  maxConnections: { env: 'MAX_CONNECTIONS', default: '10000', description: 'Open client connections allowed; past it a new one gets `ERROR max connections reached` and is closed.', parse: integer(1, 1_000_000) },
  idleTimeoutMs: { env: 'IDLE_TIMEOUT_MS', default: '300000', description: 'Close a client connection idle this long, in ms; 0 = never.', parse: integer(0, 2_147_483_647) },
  outputStallTimeoutMs: { env: 'OUTPUT_STALL_TIMEOUT_MS', default: '30000', description: 'Close a client connection whose replies fill the socket and of which the client takes nothing for this long, in ms; 0 = never.', parse: integer(0, 2_147_483_647) },
  ...commonSettings,
} satisfies Record<string, Setting<unknown>>;

export const backendSettings = {
  host: { env: 'HOST', default: '0.0.0.0', description: 'Address the backend (and its admin port) binds.', parse: host },
  port: { env: 'PORT', default: '8080', description: 'HTTP port of the backend: every path is a key.', parse: port },
  metricsPort: { env: 'BACKEND_METRICS_PORT', default: '8081', description: 'Admin HTTP port of the backend: /metrics, /livez, /readyz, /healthz.', parse: port },
  store: { env: 'KV_STORE', default: '127.0.0.1:8765', description: 'Store address, `host:port`.', parse: hostPort },
  storeTimeoutMs: { env: 'STORE_TIMEOUT_MS', default: '1000', description: 'Time-out on every store command, in ms.', parse: integer(1, 600_000) },
  storePoolSize: { env: 'STORE_POOL_SIZE', default: '4', description: 'Persistent TCP connections the backend keeps to the store; requests are pipelined on them.', parse: integer(1, 256) },
  ...commonSettings,
} satisfies Record<string, Setting<unknown>>;

type Parsed<S extends Record<string, Setting<unknown>>> = {
  readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never;
};

export type StoreConfig = Parsed<typeof storeSettings>;
export type BackendConfig = Parsed<typeof backendSettings>;

export function loadConfig<S extends Record<string, Setting<unknown>>>(settings: S, env: Env): Parsed<S> {
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings)) {
    const raw = env[setting.env];
    out[name] = setting.parse(raw === undefined || raw === '' ? setting.default : raw.trim(), setting.env);
  }
  return Object.freeze(out) as Parsed<S>;
}

export const loadStoreConfig = (env: Env, overrides: Partial<StoreConfig> = {}): StoreConfig =>
  Object.freeze({ ...loadConfig(storeSettings, env), ...overrides });

export const loadBackendConfig = (env: Env, overrides: Partial<BackendConfig> = {}): BackendConfig =>
  Object.freeze({ ...loadConfig(backendSettings, env), ...overrides });

/** The line bound of the protocol (SPEC §1): room for command, key, seconds and separators. */
export const lineBound = (maxValueBytes: number): number => maxValueBytes + 512;
