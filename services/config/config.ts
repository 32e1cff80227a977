import { LINE_ROOM_BYTES } from '../protocol/limits.ts';
import { ERROR_REASONS, errorLine } from '../protocol/replies.ts';
import { ConfigError } from '../shared/config-error.ts';
import type { LogLevel } from '../shared/logger.ts';
import { flag, host, hostPort, integer, oneOf, snapshotPath, type HostPort } from './setting-parsers.ts';
import { parseStoreSource } from './store-list.ts';
import { passwordFilePath, passwordValue, resolvePassword } from './password-settings.ts';
import { readTokensFile } from './token-file.ts';
import { backendTlsOn, readBackendTls, type BackendTlsFiles } from './backend-tls.ts';
import { pemFilePath, resolveClientTls, resolveStoreTls, type ClientAuthMode, type ClientTlsSettings, type StoreTlsSettings } from './tls-settings.ts';

// Configuration is read once at start-up from an env object (never process.env at
// import time), validated, and frozen. Each setting lives in one table with its
// default and meaning; the tables of docs/configuration.md are generated from these, and a
// test holds them to it.

export type EvictionPolicy = 'lru' | 'noeviction';
/** STORE_NATIVE_IO: whether client sockets go through the store's C add-on (the store's native-io.ts). */
export type NativeIoMode = 'auto' | 'on' | 'off';

export interface Setting<T> {
  readonly env: string;
  readonly default: string;
  readonly description: string;
  readonly parse: (raw: string, env: string) => T;
  /** Parsed as given, not trimmed (a password: its spaces are part of it). */
  readonly verbatim?: boolean;
}

type Env = Record<string, string | undefined>;

const port = integer(0, 65535);
/** A file's path, '' = none; the file itself is read when the config is loaded. */
const filePath = (raw: string): string => raw;
/** KV_STORE_DNS_SERVER: '' = the system's resolvers. */
const dnsServer = (raw: string, env: string): HostPort | undefined => (raw === '' ? undefined : hostPort(raw, env));
const logLevel = oneOf<LogLevel>('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent');

export const commonSettings = {
  logLevel: { env: 'LOG_LEVEL', default: 'info', description: 'pino log level: fatal, error, warn, info, debug, trace or silent.', parse: logLevel },
  // At least 1: a store that can hold only empty values is a typo, not a choice.
  maxValueBytes: { env: 'MAX_VALUE_BYTES', default: '1048576', description: `Largest value accepted, in bytes (1 to 536870912). The store's line bound is this plus ${LINE_ROOM_BYTES}; the backend answers 413 above it.`, parse: integer(1, 512 * 1024 * 1024) },
} satisfies Record<string, Setting<unknown>>;

export const storeSettings = {
  host: { env: 'STORE_HOST', default: '127.0.0.1', description: 'Address the store (and its admin port) binds. Without STORE_PASSWORD anyone who reaches the port can read and change every key: listening on all interfaces is an explicit choice.', parse: host },
  port: { env: 'STORE_PORT', default: '8765', description: 'TCP port of the line protocol.', parse: port },
  metricsPort: { env: 'STORE_METRICS_PORT', default: '8766', description: 'Admin HTTP port of the store: /metrics, /livez, /readyz, /healthz.', parse: port },
  maxMemoryBytes: { env: 'MAX_MEMORY_BYTES', default: '268435456', description: 'Cap on USAGE (key bytes + value bytes); never passed.', parse: integer(1, Number.MAX_SAFE_INTEGER) },
  evictionPolicy: { env: 'EVICTION_POLICY', default: 'lru', description: `\`lru\` evicts least recently used keys to make room; \`noeviction\` answers \`${errorLine(ERROR_REASONS.outOfMemory)}\`.`, parse: oneOf<EvictionPolicy>('lru', 'noeviction') },
  maxConnections: { env: 'MAX_CONNECTIONS', default: '10000', description: `Open client connections allowed; past it a new one gets \`${errorLine(ERROR_REASONS.maxConnections)}\` and is closed.`, parse: integer(1, 1_000_000) },
  idleTimeoutMs: { env: 'IDLE_TIMEOUT_MS', default: '300000', description: 'Close a client connection that sent nothing and took no reply for this long, in ms (checked every quarter of it, at least once a second); 0 = never.', parse: integer(0, 2_147_483_647) },
  outputStallTimeoutMs: { env: 'OUTPUT_STALL_TIMEOUT_MS', default: '30000', description: 'Close a client connection whose replies fill the socket and of which the client takes nothing for this long, in ms; 0 = never.', parse: integer(0, 2_147_483_647) },
  warmupKeys: {
    env: 'STORE_WARMUP_KEYS',
    default: '0',
    description: 'At start-up, before the snapshot loads and the listener opens, a scratch store on loopback writes, reads and deletes this many keys through the store\'s own code (and reads up to 500 of them one at a time, as a client that waits for each reply does), then writes and reads them again, with its pages from where the store\'s come from, so V8 has compiled it before the first client. 0 (the default) = none: the store serves about 0.5 s sooner, and the first milliseconds of a load see round trips about 1 ms longer while V8 compiles; 20,000 keys take about 0.5 s.',
    parse: integer(0, 1_000_000),
  },
  snapshotPath: {
    env: 'STORE_SNAPSHOT_PATH',
    default: '',
    description: 'Snapshot file: loaded at start-up before connections are accepted, written on SIGTERM/SIGINT after the last reply. Empty = no snapshots. Its directory must exist.',
    parse: snapshotPath,
  },
  snapshotIntervalS: {
    env: 'STORE_SNAPSHOT_INTERVAL_S',
    default: '0',
    description: 'Also write the snapshot every this many seconds while serving (a point-in-time image); 0 = only at shutdown. Needs `STORE_SNAPSHOT_PATH`.',
    parse: integer(0, 31_536_000),
  },
  nativeIo: {
    env: 'STORE_NATIVE_IO',
    default: 'auto',
    description:
      'Client connections served by the store\'s C add-on (built by `npm ci` where a C compiler and Node\'s headers are present; Linux): taken from the listener without a `net.Socket`, read, written and ended through it; `auto` uses it when built, else Node\'s own socket I/O; `on` refuses to start without it; `off` never uses it. Never with TLS (STORE_TLS_CERT_FILE): Node\'s TLS stack serves those sockets, and `on` is refused with it.',
    parse: oneOf<NativeIoMode>('auto', 'on', 'off'),
  },
  password: {
    env: 'STORE_PASSWORD',
    default: '',
    description:
      'A password every connection must send with `AUTH <password>` before any other command but QUIT (see Security); empty = none. Taken as given, spaces included; no line break. Prefer STORE_PASSWORD_FILE: a variable shows in the process\'s environment.',
    parse: passwordValue,
    verbatim: true,
  },
  passwordFile: {
    env: 'STORE_PASSWORD_FILE',
    default: '',
    description:
      'A file holding the password instead (a Docker or Kubernetes secret); one trailing line break is dropped. During a rotation a second line holds the previous password, accepted too (see Security). Read at start-up, again on SIGHUP and when it changes on disk (looked at every 5 s; a Kubernetes symlink swap included): new connections need a password the file holds, those already in stay. A reload that fails keeps the passwords in use. Not with STORE_PASSWORD.',
    parse: passwordFilePath,
  },
  tlsCertFile: {
    env: 'STORE_TLS_CERT_FILE',
    default: '',
    description:
      'PEM certificate (leaf first, then intermediates): with STORE_TLS_KEY_FILE, STORE_PORT speaks TLS only (see Security). Read at start-up, again on SIGHUP and when it changes on disk (looked at every 5 s; a Kubernetes symlink swap included) with no connection dropped; a reload that fails keeps the certificate in use. Empty = plaintext.',
    parse: pemFilePath,
  },
  tlsKeyFile: { env: 'STORE_TLS_KEY_FILE', default: '', description: 'PEM private key of STORE_TLS_CERT_FILE (unencrypted); reloaded with it.', parse: pemFilePath },
  tlsCaFile: {
    env: 'STORE_TLS_CA_FILE',
    default: '',
    description: 'PEM CA bundle that client certificates are checked against; needs STORE_TLS_CLIENT_AUTH. Reloaded with the certificate.',
    parse: pemFilePath,
  },
  tlsClientAuth: {
    env: 'STORE_TLS_CLIENT_AUTH',
    default: 'none',
    description:
      '`require`: a client must present a certificate signed by STORE_TLS_CA_FILE; `optional`: one it presents must be, and one without is served; `none`: none asked for. The store\'s own readiness probe presents the store\'s certificate, so one restricted by extended key usage needs clientAuth too.',
    parse: oneOf<ClientAuthMode>('none', 'optional', 'require'),
  },
  snapshotRequired: {
    env: 'STORE_SNAPSHOT_REQUIRED',
    default: 'false',
    description: '`true`: a snapshot file that is truncated, corrupted or of an unknown version stops the store (exit 1) instead of being renamed aside for an empty start. A missing file is a first start either way.',
    parse: flag,
  },
  ...commonSettings,
} satisfies Record<string, Setting<unknown>>;

export const backendSettings = {
  host: { env: 'HOST', default: '0.0.0.0', description: 'Address the backend (and its admin port) binds.', parse: host },
  port: { env: 'PORT', default: '8080', description: 'HTTP port of the backend: every path is a key.', parse: port },
  metricsPort: { env: 'BACKEND_METRICS_PORT', default: '8081', description: 'Admin HTTP port of the backend: /metrics, /livez, /readyz, /healthz.', parse: port },
  tokensFile: {
    env: 'BACKEND_TOKENS_FILE',
    default: '',
    description:
      'A file of bearer tokens, one `<scope> <token>` per line (scope `read`: GET and HEAD; `write`: every method; at least 16 characters of `A-Z a-z 0-9 - . _ ~ + /`, trailing `=`), blank lines and `#` comments ignored. When set, every request on PORT needs `Authorization: Bearer <token>` (401 without a known one, 403 for a read token writing); the admin port stays open. Read at start-up, again on SIGHUP and when it changes on disk (looked at every 5 s); a reload that fails keeps the tokens in use. Empty = no tokens (see Security).',
    parse: filePath,
  },
  tlsCertFile: {
    env: 'BACKEND_TLS_CERT_FILE',
    default: '',
    description:
      'A PEM certificate (leaf first, then any intermediates): with BACKEND_TLS_KEY_FILE, PORT speaks HTTPS only; the admin port stays plain HTTP. Read at start-up, again on SIGHUP and when either file changes on disk (looked at every 5 s; a Kubernetes symlink swap included): new connections get the new certificate, open ones keep theirs. A reload that fails (unreadable, a key that does not match) keeps the pair in use. Empty = plain HTTP.',
    parse: filePath,
  },
  tlsKeyFile: {
    env: 'BACKEND_TLS_KEY_FILE',
    default: '',
    description: 'The PEM private key of BACKEND_TLS_CERT_FILE (not encrypted); both or neither.',
    parse: filePath,
  },
  store: {
    env: 'KV_STORE',
    default: '127.0.0.1:8765',
    description:
      'Store address, `host:port`, or a comma-separated list of shards (`name=host:port` names one; IPv6 as `[::1]:8765`), or DNS discovery: `dnssrv+<name>` (SRV records: one shard per target host, named by it) or `dns+<host>:<port>` (A/AAAA records: one shard per address); see Sharding.',
    parse: parseStoreSource,
  },
  storeRefreshMs: {
    env: 'KV_STORE_REFRESH_MS',
    default: '10000',
    description: 'With DNS discovery in KV_STORE: how often the records are looked up again, in ms (SRV answers carry no TTL for Node, so the backend polls). A failed, timed-out or empty lookup keeps the shards it has.',
    parse: integer(100, 86_400_000),
  },
  storeDnsServer: {
    env: 'KV_STORE_DNS_SERVER',
    default: '',
    description: 'With DNS discovery: the DNS server to ask, `host:port` (IPv6 as `[::1]:53`), for the records and for the SRV targets\' addresses; empty = the system\'s resolvers.',
    parse: dnsServer,
  },
  storePassword: {
    env: 'KV_STORE_PASSWORD',
    default: '',
    description: 'The password of the store shards (their STORE_PASSWORD), sent with AUTH on every connection before any command; empty = none. Taken as given, spaces included. Prefer KV_STORE_PASSWORD_FILE.',
    parse: passwordValue,
    verbatim: true,
  },
  storePasswordFile: {
    env: 'KV_STORE_PASSWORD_FILE',
    default: '',
    description: 'A file holding that password instead, read at start-up; one trailing line break is dropped. Its first line is sent: the store\'s own file, with a previous password on its second line during a rotation, serves as it is. Not with KV_STORE_PASSWORD.',
    parse: passwordFilePath,
  },
  storeTls: {
    env: 'KV_STORE_TLS',
    default: 'false',
    description: '`true`: every connection to every store shard speaks TLS (the shards\' STORE_TLS_CERT_FILE), and checks the shard\'s certificate against KV_STORE_TLS_CA_FILE (else the system\'s CAs) and its name or address.',
    parse: flag,
  },
  storeTlsCaFile: { env: 'KV_STORE_TLS_CA_FILE', default: '', description: 'PEM CA bundle the store shards\' certificates are checked against; empty = the system\'s CAs. Needs KV_STORE_TLS=true.', parse: pemFilePath },
  storeTlsCertFile: {
    env: 'KV_STORE_TLS_CERT_FILE',
    default: '',
    description: 'PEM client certificate presented to the shards (their STORE_TLS_CLIENT_AUTH), with KV_STORE_TLS_KEY_FILE. Both are read again for each new connection once they change on disk, so a rotated certificate is used by the next one.',
    parse: pemFilePath,
  },
  storeTlsKeyFile: { env: 'KV_STORE_TLS_KEY_FILE', default: '', description: 'PEM private key of KV_STORE_TLS_CERT_FILE (unencrypted).', parse: pemFilePath },
  storeTimeoutMs: { env: 'STORE_TIMEOUT_MS', default: '1000', description: 'Time-out on every store command, in ms.', parse: integer(1, 600_000) },
  storePoolSize: { env: 'STORE_POOL_SIZE', default: '4', description: 'Persistent TCP connections the backend keeps to each store shard; requests are pipelined on them.', parse: integer(1, 256) },
  shardEjectAfter: {
    env: 'SHARD_EJECT_AFTER',
    default: '0',
    description: 'Consecutive failed commands (unreachable or timed out) after which a shard leaves the ring for SHARD_RETRY_MS and its keys go to their next choice; 0 = never (its keys get 503/504).',
    parse: integer(0, 1_000_000),
  },
  shardRetryMs: { env: 'SHARD_RETRY_MS', default: '30000', description: 'How long an ejected shard stays out of the ring, in ms.', parse: integer(1, 86_400_000) },
  bodyTimeoutMs: {
    env: 'BODY_TIMEOUT_MS',
    default: '30000',
    description: 'Longest a request body may take to arrive once its headers are in, in ms; a slower one gets 408 and its connection is closed.',
    parse: integer(1, 3_600_000),
  },
  bodyBufferBytes: {
    env: 'BODY_BUFFER_BYTES',
    default: '67108864',
    description: 'Request-body bytes the backend holds at once across all connections (a declared Content-Length counts whole from the start); a body that does not fit gets 503 at once. At least MAX_VALUE_BYTES.',
    parse: integer(1, Number.MAX_SAFE_INTEGER),
  },
  shutdownDelayMs: {
    env: 'BACKEND_SHUTDOWN_DELAY_MS',
    default: '0',
    description: 'On SIGTERM, how long the backend keeps serving with /readyz failing (and every response closing its connection) before its listener closes, in ms, so a load balancer can take it out first.',
    parse: integer(0, 600_000),
  },
  ...commonSettings,
} satisfies Record<string, Setting<unknown>>;

type Parsed<S extends Record<string, Setting<unknown>>> = {
  readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never;
};

/** The store's settings, and its TLS as loadStoreConfig resolved it (files read, checked). */
export type StoreConfig = Parsed<typeof storeSettings> & { readonly tls?: StoreTlsSettings | undefined };
/** The backend's settings, and its TLS to the store shards as loadBackendConfig resolved it. */
export type BackendConfig = Parsed<typeof backendSettings> & { readonly storeTlsFiles?: ClientTlsSettings | undefined };

export function loadConfig<S extends Record<string, Setting<unknown>>>(settings: S, env: Env): Parsed<S> {
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings)) {
    const raw = env[setting.env];
    const given = raw === undefined || raw === '' ? setting.default : raw;
    out[name] = setting.parse(setting.verbatim === true ? given : given.trim(), setting.env);
  }
  return Object.freeze(out) as Parsed<S>;
}

/** Two listeners of one service cannot share a port (0 asks the system for any free one). */
function checkDistinctPorts(port: number, portEnv: string, metricsPort: number, metricsEnv: string): void {
  if (port !== 0 && port === metricsPort) {
    throw new ConfigError(`${metricsEnv}=${metricsPort} is invalid: it is also ${portEnv}; the admin port needs a port of its own`);
  }
}

/** The password in effect at start-up: STORE_PASSWORD's, or STORE_PASSWORD_FILE's read now (password-file.ts reads the file again). */
export function storePasswordOf(config: Pick<StoreConfig, 'password' | 'passwordFile'>) {
  return resolvePassword({ password: config.password, passwordFile: config.passwordFile, passwordEnv: storeSettings.password.env, passwordFileEnv: storeSettings.passwordFile.env });
}

/** The store shards' password for a client (the backend): KV_STORE_PASSWORD's, or KV_STORE_PASSWORD_FILE's read now. */
export function clientPasswordOf(config: { readonly storePassword: StoreConfig['password']; readonly storePasswordFile: string }) {
  return resolvePassword({
    password: config.storePassword,
    passwordFile: config.storePasswordFile,
    passwordEnv: backendSettings.storePassword.env,
    passwordFileEnv: backendSettings.storePasswordFile.env,
  });
}

/** BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE with their variables' names, for backend-tls.ts. */
export function backendTlsFilesOf(config: Pick<BackendConfig, 'tlsCertFile' | 'tlsKeyFile'>): BackendTlsFiles {
  return { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, certEnv: backendSettings.tlsCertFile.env, keyEnv: backendSettings.tlsKeyFile.env };
}

/** The store's TLS in effect at start-up (its files read now), or undefined when it is off. */
export function storeTlsOf(config: Pick<StoreConfig, 'tlsCertFile' | 'tlsKeyFile' | 'tlsCaFile' | 'tlsClientAuth'>) {
  return resolveStoreTls({
    certFile: config.tlsCertFile,
    keyFile: config.tlsKeyFile,
    caFile: config.tlsCaFile,
    clientAuth: config.tlsClientAuth,
    certEnv: storeSettings.tlsCertFile.env,
    keyEnv: storeSettings.tlsKeyFile.env,
    caEnv: storeSettings.tlsCaFile.env,
    clientAuthEnv: storeSettings.tlsClientAuth.env,
  });
}

/** A client's TLS to the store shards (the backend's, kv's), or undefined when KV_STORE_TLS is off. */
export function clientTlsOf(config: Pick<BackendConfig, 'storeTls' | 'storeTlsCaFile' | 'storeTlsCertFile' | 'storeTlsKeyFile'>) {
  return resolveClientTls({
    tls: config.storeTls,
    caFile: config.storeTlsCaFile,
    certFile: config.storeTlsCertFile,
    keyFile: config.storeTlsKeyFile,
    tlsEnv: backendSettings.storeTls.env,
    caEnv: backendSettings.storeTlsCaFile.env,
    certEnv: backendSettings.storeTlsCertFile.env,
    keyEnv: backendSettings.storeTlsKeyFile.env,
  });
}

export function loadStoreConfig(env: Env, overrides: Partial<StoreConfig> = {}): StoreConfig {
  const loaded = { ...loadConfig(storeSettings, env), ...overrides };
  // The files are read once here, so a missing or unusable one stops the start.
  const config = Object.freeze({ ...loaded, password: storePasswordOf(loaded), tls: storeTlsOf(loaded) });
  checkDistinctPorts(config.port, storeSettings.port.env, config.metricsPort, storeSettings.metricsPort.env);
  if (config.tls !== undefined && config.nativeIo === 'on') {
    throw new ConfigError(`${storeSettings.nativeIo.env}=on is invalid with ${storeSettings.tlsCertFile.env}: TLS connections go through Node's TLS stack, never the native socket I/O; set auto or off`);
  }
  if (config.snapshotIntervalS > 0 && config.snapshotPath === '') {
    throw new ConfigError(`${storeSettings.snapshotIntervalS.env}=${config.snapshotIntervalS} is invalid: it needs ${storeSettings.snapshotPath.env} (where to write)`);
  }
  return config;
}

export function loadBackendConfig(env: Env, overrides: Partial<BackendConfig> = {}): BackendConfig {
  const loaded = { ...loadConfig(backendSettings, env), ...overrides };
  const config = Object.freeze({ ...loaded, storePassword: clientPasswordOf(loaded), storeTlsFiles: clientTlsOf(loaded) });
  checkDistinctPorts(config.port, backendSettings.port.env, config.metricsPort, backendSettings.metricsPort.env);
  // Read once here so an unusable file stops the start; the service reads it again to serve.
  if (config.tokensFile !== '') readTokensFile(config.tokensFile, backendSettings.tokensFile.env);
  const tls = backendTlsFilesOf(config);
  if (backendTlsOn(tls)) readBackendTls(tls);
  if (config.bodyBufferBytes < config.maxValueBytes) {
    throw new ConfigError(
      `${backendSettings.bodyBufferBytes.env}=${config.bodyBufferBytes} is invalid: it is below ${commonSettings.maxValueBytes.env}=${config.maxValueBytes}, so a value of the largest size could never be accepted`,
    );
  }
  return config;
}

