import { AbstractStartedContainer, GenericContainer, Wait } from 'testcontainers';
import { STORE_PORT, type StartedKvstackContainer } from './kvstack-container.ts';

/** The backend's image as docker-compose.yml names it: built from deploy/Dockerfile's `backend` target. */
export const KVSTACK_BACKEND_IMAGE = 'kvstack-backend:local';
/** The backend's HTTP port inside the container: every path is a key. */
export const BACKEND_HTTP_PORT = 8080;
/** The backend's admin HTTP port inside the container. */
export const BACKEND_ADMIN_PORT = 8081;
const PASSWORD_FILE = '/run/kvstack/store-password';
const TLS_DIR = '/run/kvstack/tls';

/**
 * The kvstack HTTP backend in a container, in front of started store containers:
 * `await new KvstackBackendContainer().withStore(store).start()`, or `withStore(a, b, c)`
 * for a ring of shards (named `store-0`, `store-1`… in the order given).
 *
 * The default wait is the admin port's `/readyz` over HTTP from the host, 200 once the
 * backend's pooled connections reach a store: started means it serves. Set after the
 * constructor, a wait strategy of the caller's wins.
 */
export class KvstackBackendContainer extends GenericContainer {
  constructor(image: string = KVSTACK_BACKEND_IMAGE) {
    super(image);
    this.withExposedPorts(BACKEND_HTTP_PORT, BACKEND_ADMIN_PORT)
      .withEnvironment({ PORT: String(BACKEND_HTTP_PORT), BACKEND_METRICS_PORT: String(BACKEND_ADMIN_PORT) })
      // Testcontainers asks again one read timeout after a refused or failed request (1 s by
      // default, most of a start: the backend serves ~0.3 s after its process starts).
      // 500 ms halves that wait and still leaves a loaded runner's /readyz time to answer;
      // an answer that takes longer is asked again, until the start-up timeout.
      .withWaitStrategy(Wait.forHttp('/readyz', BACKEND_ADMIN_PORT).forStatusCode(200).withReadTimeout(500))
      .withStartupTimeout(60_000);
  }

  /**
   * The stores behind it (KV_STORE), reached over the first store's Docker network (the
   * one of yours it was started on, else the default bridge), which the backend joins.
   * A store with a network alias is reached by that name (through Docker's DNS on a
   * network of yours, so a store stopped and started again is followed to its new
   * address; in the backend's /etc/hosts on the default bridge), else by its address.
   * Their password and TLS, which they must share, go in files (KV_STORE_PASSWORD_FILE,
   * KV_STORE_TLS_*); over TLS each store needs an alias its certificate names.
   */
  withStore(...stores: StartedKvstackContainer[]): this {
    if (stores.length === 0) throw new TypeError('withStore: at least one started KvstackContainer');
    // A container started withNetwork(n) is on Docker's default bridge too, listed in no
    // fixed order: the caller's network is the one that is not the default.
    const names = stores[0]!.getNetworkNames();
    const network = names.find((n) => n !== 'bridge') ?? names[0];
    if (network === undefined) throw new TypeError('withStore: the store container is on no Docker network');
    const passwords = new Set(stores.map((s) => s.getPassword()));
    if (passwords.size > 1) throw new TypeError('withStore: the stores of one ring share one password (KV_STORE_PASSWORD_FILE)');
    const tls = stores[0]!.getTls();
    if (stores.some((s) => s.getTls() !== tls)) throw new TypeError('withStore: the stores of one ring share one withTls (KV_STORE_TLS_*)');
    const hosts: { host: string; ipAddress: string }[] = [];
    const list = stores.map((s, i) => {
      const alias = s.getNetworkAlias();
      if (tls !== undefined && alias === undefined) throw new TypeError(`withStore: store ${i} speaks TLS: give it a network alias its certificate names (withNetworkAliases)`);
      const ip = s.getIpAddress(network);
      if (!ip) throw new TypeError(`withStore: store ${i} is not on the network ${network}`);
      // On a network of the caller's, Docker's embedded DNS answers the alias with the
      // store's address of the moment: a store stopped and started again may come back
      // with another one, which a fixed /etc/hosts line would miss. The default bridge
      // has no DNS: there the alias goes in /etc/hosts with the address known now.
      if (alias !== undefined && network === 'bridge') hosts.push({ host: alias, ipAddress: ip });
      const address = alias ?? ip;
      return stores.length === 1 ? `${address}:${STORE_PORT}` : `store-${i}=${address}:${STORE_PORT}`;
    });
    this.withNetworkMode(network).withExtraHosts(hosts).withEnvironment({ KV_STORE: list.join(',') });
    const [password] = passwords;
    if (password !== undefined) {
      this.withEnvironment({ KV_STORE_PASSWORD_FILE: PASSWORD_FILE }).withCopyContentToContainer([{ content: password, target: PASSWORD_FILE, mode: 0o444 }]);
    }
    if (tls !== undefined) {
      const env: Record<string, string> = { KV_STORE_TLS: 'true' };
      const files: { content: string; target: string; mode: number }[] = [];
      const put = (variable: string, name: string, content: string | undefined) => {
        if (content === undefined) return;
        env[variable] = `${TLS_DIR}/${name}`;
        files.push({ content, target: `${TLS_DIR}/${name}`, mode: 0o444 });
      };
      put('KV_STORE_TLS_CA_FILE', 'ca.crt', tls.ca);
      put('KV_STORE_TLS_CERT_FILE', 'client.crt', tls.client?.cert);
      put('KV_STORE_TLS_KEY_FILE', 'client.key', tls.client?.key);
      this.withEnvironment(env).withCopyContentToContainer(files);
    }
    return this;
  }

  override async start(): Promise<StartedKvstackBackendContainer> {
    return new StartedKvstackBackendContainer(await super.start());
  }
}

/** A started backend: its HTTP and admin URLs, and `await using`. */
export class StartedKvstackBackendContainer extends AbstractStartedContainer {
  /** `http://host:port` of the HTTP cache API (`PUT /<key>`, `GET /<key>`, ...). */
  getHttpUrl(): string {
    return `http://${this.getHost()}:${this.getMappedPort(BACKEND_HTTP_PORT)}`;
  }

  /** `http://host:port` of the admin endpoints (`/metrics`, `/livez`, `/readyz`, `/healthz`). */
  getAdminUrl(): string {
    return `http://${this.getHost()}:${this.getMappedPort(BACKEND_ADMIN_PORT)}`;
  }
}
