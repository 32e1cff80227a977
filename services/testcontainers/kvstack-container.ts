import { AbstractStartedContainer, GenericContainer, Wait, type StartedTestContainer, type StopOptions, type StoppedTestContainer } from 'testcontainers';
import { TlsMaterialSource } from '../client/client-tls.ts';
import { StoreConnection, type StoreConnectionOptions } from '../client/store-connection.ts';
import { formatStoreUrl } from '../client/store-url.ts';
import { Secret } from '../shared/secret.ts';
import { STORE_READY } from '../shared/ready-line.ts';

/** The store's image as docker-compose.yml names it: built from deploy/Dockerfile's `store` target. */
export const KVSTACK_STORE_IMAGE = 'kvstack-store:local';
/** The store's line protocol port inside the container. */
export const STORE_PORT = 8765;
/** The store's admin HTTP port inside the container (/metrics, /livez, /readyz, /healthz). */
export const STORE_ADMIN_PORT = 8766;
/** Where the image keeps snapshots: a directory owned by the user the store runs as. */
export const SNAPSHOT_DIR = '/var/lib/kvstack';
const SNAPSHOT_FILE = `${SNAPSHOT_DIR}/store.snapshot`;
/** The password goes in a file (STORE_PASSWORD_FILE), so it is not in `docker inspect`. */
const PASSWORD_FILE = '/run/kvstack/store-password';
const TLS_DIR = '/run/kvstack/tls';
const isPem = (text: unknown): boolean => typeof text === 'string' && text.includes('-----BEGIN ');

export type EvictionPolicy = 'lru' | 'noeviction';

/** PEM text, not paths: the module writes it into the containers. */
export interface StoreTlsOptions {
  /** The store's certificate: it must name the host your tests reach (often `localhost`) and, behind a backend, the store's network alias. */
  readonly cert: string;
  readonly key: string;
  /** The CA the clients trust for the store's certificate, and (with clientAuth) the one client certificates must be signed by. */
  readonly ca?: string;
  /** STORE_TLS_CLIENT_AUTH: `require` or `optional` client certificates (default none asked for). */
  readonly clientAuth?: 'require' | 'optional';
  /** The certificate the module's clients and a backend in front present (needed with `clientAuth: 'require'`). */
  readonly client?: { readonly cert: string; readonly key: string };
}

export interface SnapshotOptions {
  /** STORE_SNAPSHOT_INTERVAL_S: also save every that many seconds while serving (default 0: at stop only). */
  readonly intervalSeconds?: number;
  /** STORE_SNAPSHOT_REQUIRED: exit rather than start empty when the file is unreadable. */
  readonly required?: boolean;
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new TypeError(message);
}

/**
 * The kvstack store in a container, in the shape of the Testcontainers modules:
 * `await new KvstackContainer().withPassword('s3cret').start()`.
 *
 * Its defaults are set here, in the constructor, so that anything set after it wins,
 * a wait strategy above all: the default waits for the store's ready log line, which it
 * writes once it serves. It never uses Testcontainers' default port wait, which runs a
 * shell inside the container, nor a fixed time for the ports.
 */
export class KvstackContainer extends GenericContainer {
  #password: string | undefined;
  #tls: StoreTlsOptions | undefined;

  constructor(image: string = KVSTACK_STORE_IMAGE) {
    super(image);
    this.withExposedPorts(STORE_PORT, STORE_ADMIN_PORT)
      // The image binds 127.0.0.1 by default; the container's own network is private to it.
      .withEnvironment({ STORE_HOST: '0.0.0.0', STORE_PORT: String(STORE_PORT), STORE_METRICS_PORT: String(STORE_ADMIN_PORT) })
      .withWaitStrategy(Wait.forLogMessage(new RegExp(`"msg":"${STORE_READY}"`)))
      .withStartupTimeout(60_000);
  }

  /** MAX_MEMORY_BYTES: the cap on key bytes + value bytes. */
  withMemoryCap(bytes: number): this {
    check(Number.isSafeInteger(bytes) && bytes >= 1, `withMemoryCap: a whole number of bytes from 1, not ${bytes}`);
    return this.withEnvironment({ MAX_MEMORY_BYTES: String(bytes) });
  }

  /** EVICTION_POLICY: `lru` (evict to make room) or `noeviction` (refuse with `ERROR out of memory`). */
  withEvictionPolicy(policy: EvictionPolicy): this {
    check(policy === 'lru' || policy === 'noeviction', `withEvictionPolicy: lru or noeviction, not ${String(policy)}`);
    return this.withEnvironment({ EVICTION_POLICY: policy });
  }

  /**
   * The store's password (SPEC §8), written to a file in the container and given to the
   * store as STORE_PASSWORD_FILE. The started container's client and connection URL carry it.
   */
  withPassword(password: string): this {
    check(password !== '' && !/[\r\n]/.test(password), 'withPassword: a non-empty password without line breaks');
    this.#password = password;
    return this.withEnvironment({ STORE_PASSWORD_FILE: PASSWORD_FILE }).withCopyContentToContainer([{ content: password, target: PASSWORD_FILE, mode: 0o444 }]);
  }

  /**
   * TLS on the store's port (SPEC §8): the PEM texts are written into the container and
   * named by STORE_TLS_CERT_FILE, STORE_TLS_KEY_FILE and, with `ca`, STORE_TLS_CA_FILE.
   * The started container's clients (and a backend put in front of it) trust `ca` and
   * present `client`; the store checks its name, so the certificate must name the host
   * the tests reach and, for a backend, an alias of the store on a network of yours
   * (`withNetwork(n).withNetworkAliases('kvstore')`).
   */
  withTls(options: StoreTlsOptions): this {
    check(isPem(options.cert) && isPem(options.key), 'withTls: cert and key are PEM text (not paths)');
    check(options.ca === undefined || isPem(options.ca), 'withTls: ca is PEM text (not a path)');
    check(options.client === undefined || (isPem(options.client.cert) && isPem(options.client.key)), 'withTls: client.cert and client.key are PEM text (not paths)');
    check(options.clientAuth === undefined || ((options.clientAuth === 'require' || options.clientAuth === 'optional') && options.ca !== undefined), 'withTls: clientAuth is require or optional, and needs ca');
    this.#tls = options;
    const env: Record<string, string> = { STORE_TLS_CERT_FILE: `${TLS_DIR}/store.crt`, STORE_TLS_KEY_FILE: `${TLS_DIR}/store.key` };
    const files = [
      { content: options.cert, target: `${TLS_DIR}/store.crt`, mode: 0o444 },
      { content: options.key, target: `${TLS_DIR}/store.key`, mode: 0o444 },
    ];
    if (options.clientAuth !== undefined) {
      env.STORE_TLS_CA_FILE = `${TLS_DIR}/ca.crt`;
      env.STORE_TLS_CLIENT_AUTH = options.clientAuth;
      files.push({ content: options.ca!, target: `${TLS_DIR}/ca.crt`, mode: 0o444 });
    }
    return this.withEnvironment(env).withCopyContentToContainer(files);
  }

  /**
   * Keeps the cache over restarts (SPEC §7): mounts `source` on the image's snapshot
   * directory and sets STORE_SNAPSHOT_PATH in it. An absolute path is a host directory
   * (the store runs as uid 1000, which must be able to write there); any other name is a
   * Docker volume, created on first use with the directory's ownership.
   */
  withSnapshot(source: string, options: SnapshotOptions = {}): this {
    check(source !== '', 'withSnapshot: a host directory (absolute path) or a volume name');
    const env: Record<string, string> = { STORE_SNAPSHOT_PATH: SNAPSHOT_FILE };
    if (options.intervalSeconds !== undefined) {
      check(Number.isSafeInteger(options.intervalSeconds) && options.intervalSeconds >= 0, `withSnapshot: intervalSeconds a whole number from 0, not ${options.intervalSeconds}`);
      env.STORE_SNAPSHOT_INTERVAL_S = String(options.intervalSeconds);
    }
    if (options.required !== undefined) env.STORE_SNAPSHOT_REQUIRED = String(options.required);
    return this.withEnvironment(env).withBindMounts([{ source, target: SNAPSHOT_DIR, mode: 'rw' }]);
  }

  override async start(): Promise<StartedKvstackContainer> {
    return new StartedKvstackContainer(await super.start(), { password: this.#password, tls: this.#tls, alias: this.networkAliases[0] });
  }
}

/**
 * A started store: where to reach it, a ready client, and `await using` (stopping the
 * container destroys the clients it gave out first).
 */
export class StartedKvstackContainer extends AbstractStartedContainer {
  readonly #password: string | undefined;
  readonly #tls: StoreTlsOptions | undefined;
  readonly #alias: string | undefined;
  readonly #clients = new Set<StoreConnection>();

  constructor(started: StartedTestContainer, { password, tls, alias }: { password?: string | undefined; tls?: StoreTlsOptions | undefined; alias?: string | undefined } = {}) {
    super(started);
    this.#password = password;
    this.#tls = tls;
    this.#alias = alias;
  }

  /** The TLS the store speaks (withTls), or undefined for plaintext. */
  getTls(): StoreTlsOptions | undefined {
    return this.#tls;
  }

  /** The store's first network alias (withNetworkAliases), the name a backend reaches it by. */
  getNetworkAlias(): string | undefined {
    return this.#alias;
  }

  /** The host port of the store's line protocol. */
  getPort(): number {
    return this.getMappedPort(STORE_PORT);
  }

  /** The host port of the store's admin HTTP endpoints. */
  getAdminPort(): number {
    return this.getMappedPort(STORE_ADMIN_PORT);
  }

  getPassword(): string | undefined {
    return this.#password;
  }

  /**
   * `kvstack://[:password@]host:port`, which `parseStoreUrl` of kvstack/client reads. The
   * URL does not say TLS: with withTls, add the `tls` of getConnectionOptions().
   */
  getConnectionUrl(): string {
    return formatStoreUrl({ host: this.getHost(), port: this.getPort(), password: this.#password });
  }

  /** `http://host:port` of the admin endpoints (`/metrics`, `/livez`, `/readyz`, `/healthz`). */
  getAdminUrl(): string {
    return `http://${this.getHost()}:${this.getAdminPort()}`;
  }

  /** Options for a StoreConnection or StorePool to this store (host, port, password, TLS). */
  getConnectionOptions(): Pick<StoreConnectionOptions, 'host' | 'port' | 'password' | 'tls'> {
    const tls = this.#tls;
    return {
      host: this.getHost(),
      port: this.getPort(),
      password: this.#password === undefined ? undefined : new Secret(this.#password),
      tls: tls === undefined ? undefined : new TlsMaterialSource(() => ({ ca: tls.ca, cert: tls.client?.cert, key: tls.client?.key })),
    };
  }

  /**
   * A connected client (authenticated when the store has a password, over TLS after
   * withTls; an `options.tls` of yours replaces the module's). It is destroyed when the
   * container stops; close it earlier to let its pending commands finish.
   */
  async client(options: Omit<StoreConnectionOptions, 'host' | 'port' | 'password'> = {}): Promise<StoreConnection> {
    const client = new StoreConnection({ timeoutMs: 5000, ...this.getConnectionOptions(), ...options });
    this.#clients.add(client);
    try {
      await client.connect();
    } catch (err) {
      client.destroy();
      this.#clients.delete(client);
      throw err;
    }
    return client;
  }

  /**
   * Stops as `docker stop` does: SIGTERM, then SIGKILL after `timeout` ms (default 10 s;
   * Testcontainers' own default is 0, an immediate kill), so a store with a snapshot
   * writes it on the way out. The store exits within milliseconds of SIGTERM.
   */
  override stop(options: Partial<StopOptions> = {}): Promise<StoppedTestContainer> {
    return super.stop({ timeout: 10_000, ...options });
  }

  protected override async containerStopping(): Promise<void> {
    for (const client of this.#clients) client.destroy();
    this.#clients.clear();
  }
}
