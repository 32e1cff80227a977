import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { afterEach } from 'vitest';
import { StoreConnection } from '../../services/client/index.ts';
import { startBackendService, type BackendDeps, type BackendService } from '../../services/backend/backend-service.ts';
import { loadBackendConfig, loadStoreConfig, type BackendConfig, type StoreConfig } from '../../services/config/config.ts';
import { createLogger, type LogLevel, type Logger } from '../../services/shared/logger.ts';
import { parseStoreList, parseStoreSource, type StoreShard } from '../../services/config/store-list.ts';
import type { startStoreService } from '../../services/store/store-service.ts';
import { startFakeStore, type FakeAction, type FakeStore } from './fake-store.ts';

export type StoreService = Awaited<ReturnType<typeof startStoreService>>;

export const silentLogger = (): Logger => createLogger({ name: 'test', level: 'silent' });

/** Parsed JSON log lines, written by a pino logger whose destination is this sink. */
export interface LogSink {
  readonly lines: Record<string, unknown>[];
  readonly raw: string[];
  write(chunk: string): void;
}

export function logSink(): LogSink {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  return {
    lines,
    raw,
    write(chunk: string) {
      for (const line of chunk.split('\n')) {
        if (line === '') continue;
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
    },
  };
}

export interface RawResponse {
  readonly method: string;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly text: string;
}

/** One HTTP request with the path sent exactly as given (no normalisation), body as bytes. */
export function send(port: number, method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}, httpsCa?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // With `httpsCa`: over HTTPS, trusting that CA (PEM) only.
    const request = httpsCa === undefined ? httpRequest : httpsRequest;
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false, ...(httpsCa === undefined ? {} : { ca: httpsCa }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        resolve({ method, status: res.statusCode!, headers: res.headers, body: all, text: all.toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export { metricSum, seriesOf } from '../../bench/harness/exposition.ts';

/** The parsed KV_STORE for stores on loopback ports (or a KV_STORE string as written). */
export function storeList(store: number | readonly number[] | string): readonly StoreShard[] {
  const raw = typeof store === 'string' ? store : (typeof store === 'number' ? [store] : store).map((p) => `127.0.0.1:${p}`).join(',');
  return parseStoreList(raw, 'KV_STORE');
}

/** A backend's logger (named kvbackend, as the service's) whose lines land parsed in a fresh sink. */
export function loggerWithSink(level: LogLevel = 'info'): { logger: Logger; sink: LogSink } {
  const sink = logSink();
  return { logger: createLogger({ name: 'kvbackend', level, destination: sink }), sink };
}

/** The status of a GET of `path` on a local port (an admin port's /readyz, say). */
export async function statusOf(port: number, path: string): Promise<number> {
  return (await fetch(`http://127.0.0.1:${port}${path}`)).status;
}

export async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

/**
 * Real stores, backends, fake stores and store connections for one test file; every
 * one of them is closed after each test, whether or not it passed.
 */
export function backendHarness() {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  return {
    defer(cleanup: () => unknown): void {
      cleanups.push(cleanup);
    },

    async store(overrides: Partial<StoreConfig> = {}): Promise<StoreService> {
      const config = loadStoreConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0, logLevel: 'silent', ...overrides });
      // Imported when first needed, so tests that use only fake stores load without it.
      const { startStoreService: start } = await import('../../services/store/store-service.ts');
      const store = await start(config, { logger: silentLogger() });
      cleanups.push(() => store.destroy());
      return store;
    },

    /** A backend over one store port, or a ring of stores (a list of ports, or a KV_STORE string, discovery included). */
    async backend(store: number | readonly number[] | string, overrides: Partial<BackendConfig> = {}, deps: Partial<BackendDeps> = {}): Promise<BackendService> {
      const config = loadBackendConfig(
        {},
        { host: '127.0.0.1', port: 0, metricsPort: 0, logLevel: 'silent', store: typeof store === 'string' ? parseStoreSource(store, 'KV_STORE') : storeList(store), ...overrides },
      );
      const backend = await startBackendService(config, { logger: silentLogger(), ...deps });
      cleanups.push(() => backend.destroy());
      return backend;
    },

    async fake(handle: (line: string) => FakeAction, port = 0): Promise<FakeStore> {
      const fake = await startFakeStore(handle, port);
      cleanups.push(() => fake.close());
      return fake;
    },

    /** A direct TCP connection to a store, to check what the backend did (or did not do). */
    conn(port: number): StoreConnection {
      const conn = new StoreConnection({ host: '127.0.0.1', port, timeoutMs: 2000, reconnect: false });
      cleanups.push(() => conn.destroy());
      return conn;
    },
  };
}
