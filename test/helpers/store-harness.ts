import type { DestinationStream } from 'pino';
import { loadStoreConfig, type StoreConfig } from '../../services/config/config.ts';
import { createLogger } from '../../services/shared/logger.ts';
import { startStoreService, type StoreDeps, type StoreService } from '../../services/store/store-service.ts';
import { track } from './cleanup.ts';
import { connectOverTls, LineClient } from './line-client.ts';
import { pem, tlsFixture } from './tls-certs.ts';

/**
 * The TLS run of the store suites (TEST_STORE_TLS=1, vitest.config.ts): every store the
 * harness starts speaks TLS with the test CA's certificate, and every LineClient connects
 * over TLS; what a suite asserts about the protocol must hold there too.
 */
const overTls = process.env.TEST_STORE_TLS === '1';
function tlsOverrides(): Partial<StoreConfig> {
  if (!overTls) return {};
  const f = tlsFixture();
  connectOverTls({ ca: pem(f.ca) });
  return { tlsCertFile: f.server.cert, tlsKeyFile: f.server.key };
}

/** A clock the test moves by hand: TTLs are tested without sleeping. */
export class ManualClock {
  ms = 1_700_000_000_000;
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface TestStore {
  readonly service: StoreService;
  readonly port: number;
  readonly metricsPort: number;
  readonly config: StoreConfig;
  /** Every JSON log line, parsed (nothing is printed). */
  readonly logs: Record<string, unknown>[];
  readonly clock: ManualClock;
  client(): Promise<LineClient>;
  /** GET on the admin port, resolving with status and body. */
  admin(path: string): Promise<{ status: number; body: string }>;
}

/**
 * Starts the store service on port 0 (TCP and admin), with a manual engine clock and
 * the logs captured in memory. Destroyed by destroyAll() in afterEach.
 */
export async function startTestStore(overrides: Partial<StoreConfig> = {}, deps: Partial<StoreDeps> = {}): Promise<TestStore> {
  // No warm-up unless a test asks for one: it adds ~0.15 s to each of the suite's many stores.
  // The store suites run twice (vitest.config.ts): with the native socket I/O where it is built, and through Node's.
  const nativeIo = (process.env.TEST_STORE_NATIVE_IO as StoreConfig['nativeIo'] | undefined) ?? 'auto';
  const config = loadStoreConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0, warmupKeys: 0, nativeIo, ...tlsOverrides(), ...overrides });
  const logs: Record<string, unknown>[] = [];
  const destination: DestinationStream = { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) };
  const logger = createLogger({ name: 'kvstore', level: config.logLevel, destination });
  const clock = new ManualClock();
  const service = track(await startStoreService(config, { logger, now: clock.now, ...deps }));
  return {
    service,
    port: service.port,
    metricsPort: service.metricsPort,
    config,
    logs,
    clock,
    client: () => LineClient.connect(service.port),
    async admin(path) {
      const res = await fetch(`http://127.0.0.1:${service.metricsPort}${path}`);
      return { status: res.status, body: await res.text() };
    },
  };
}
