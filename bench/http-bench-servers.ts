// The server roles of the HTTP benchmark, each run as a child process by runHttpBench
// (bench/http-bench.ts): `node bench/http-bench-servers.ts --mode <mode> --port <p>
// --store-port <p[,p...]> --report <file> [--tls-cert <file> --tls-key <file>]`.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOptions } from './harness/options.ts';
import type { HttpBenchMode } from './http-bench-report.ts';

/**
 * Counts requests and CPU time from SIGUSR2 (end of the warm-up) and writes them to
 * `report` on SIGTERM, after `stop` has run.
 */
function accountCpu(server: ReturnType<typeof createHttpServer>, report: string, stop: () => void): void {
  let requests = 0;
  let since = process.cpuUsage();
  server.on('request', () => requests++);
  process.on('SIGUSR2', () => {
    requests = 0;
    since = process.cpuUsage();
  });
  process.on('SIGTERM', () => {
    const used = process.cpuUsage(since);
    writeFileSync(report, JSON.stringify({ cpuMicros: used.user + used.system, requests }));
    stop();
    process.exit(0);
  });
}

/** The token the backend-tokens mode's clients send: one of BENCH_TOKEN_COUNT in its table. */
export const BENCH_TOKEN = 'bench-write-token-0123456789abcdef';
const BENCH_TOKEN_COUNT = 20;

async function serve(mode: HttpBenchMode, port: number, storePorts: readonly number[], report: string, tls?: { cert: string; key: string }): Promise<void> {
  const storePort = storePorts[0]!;
  if (mode === 'bare-node') {
    const server = createHttpServer((_req, res) => {
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end('Hello World!');
    }).listen(port, '127.0.0.1');
    accountCpu(server, report, () => server.closeAllConnections());
    return;
  }
  if (mode === 'bare-express') {
    const { default: express } = await import('express');
    const app = express();
    app.get('/:key', (_req, res) => {
      res.send('Hello World!');
    });
    const server = createHttpServer(app).listen(port, '127.0.0.1');
    accountCpu(server, report, () => server.closeAllConnections());
    return;
  }
  const { createBackendApp, createBackendHandler } = await import('../services/backend/backend-app.ts');
  const { createBackendMetrics } = await import('../services/backend/backend-metrics.ts');
  const { ShardedStore } = await import('../services/client/sharded-store.ts');
  const { StoreConnection } = await import('../services/client/store-connection.ts');
  const { createLogger } = await import('../services/shared/logger.ts');
  const { createMetricsRegistry } = await import('../services/shared/metrics-registry.ts');
  const { loadBackendConfig } = await import('../services/config/config.ts');

  const config = loadBackendConfig({});
  const asShipped = mode === 'backend' || mode === 'backend-3-shards' || mode === 'backend-tokens' || mode === 'backend-https';
  const withMetrics = asShipped || mode === 'backend-no-express' || mode === 'backend-no-logs' || mode === 'naive';
  const withLogs = asShipped || mode === 'backend-no-express' || mode === 'backend-no-metrics' || mode === 'naive';
  const logger = createLogger({ name: 'kvbackend', level: withLogs ? 'info' : 'silent' });
  const metrics = withMetrics ? createBackendMetrics({ registry: createMetricsRegistry() }) : undefined;
  // As the service builds it: a ring of one store, or of three, each shard with its own pool.
  const pool = new ShardedStore({
    shards: storePorts.map((p) => ({ name: `127.0.0.1:${p}`, host: '127.0.0.1', port: p })),
    pool: { size: config.storePoolSize, timeoutMs: config.storeTimeoutMs },
    observerFor: (shard) => metrics?.observerFor(shard),
  });
  const observer = metrics?.observerFor(`127.0.0.1:${storePort}`);

  // The pattern the SPEC rules out: a new TCP connection to the store for every command.
  const perRequest = <T>(run: (c: InstanceType<typeof StoreConnection>) => Promise<T>): Promise<T> => {
    const c = new StoreConnection({ host: '127.0.0.1', port: storePort, timeoutMs: config.storeTimeoutMs, reconnect: false });
    c.observer = observer;
    return run(c).finally(() => c.destroy());
  };
  const store =
    mode === 'naive'
      ? {
          get: (key: string) => perRequest((c) => c.get(key)),
          set: (key: string, value: Buffer | string, ttl?: number) => perRequest((c) => c.set(key, value, ttl)),
          del: (key: string) => perRequest((c) => c.del(key)),
        }
      : pool;
  if (mode !== 'naive') await pool.connect();
  // As BACKEND_TOKENS_FILE gives them: a table of several tokens, the clients sending one.
  let auth;
  if (mode === 'backend-tokens') {
    const { BearerAuth } = await import('../services/backend/bearer-auth.ts');
    const { parseTokens } = await import('../services/config/token-file.ts');
    const lines = Array.from({ length: BENCH_TOKEN_COUNT - 1 }, (_, i) => `read bench-read-token-${String(i).padStart(16, '0')}`);
    auth = new BearerAuth(parseTokens([...lines, `write ${BENCH_TOKEN}`].join('\n'), 'bench', 'BACKEND_TOKENS_FILE'));
  }
  const appOptions = { store, metrics, logger, maxValueBytes: config.maxValueBytes, auth };
  const app = mode === 'backend-no-express' ? createBackendHandler(appOptions) : createBackendApp(appOptions);
  const server = (mode === 'backend-https' ? createHttpsServer({ cert: tls!.cert, key: tls!.key }, app) : createHttpServer(app)).listen(port, '127.0.0.1');
  accountCpu(server, report, () => {
    server.closeAllConnections();
    pool.destroy();
  });
}

if (import.meta.main) {
  const values = parseOptions('Usage: node bench/http-bench-servers.ts --mode <mode> --port <p> --store-port <p[,p...]> --report <file> [--tls-cert <file> --tls-key <file>]', {
    mode: { type: 'string' },
    port: { type: 'string' },
    'store-port': { type: 'string' },
    report: { type: 'string' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
  });
  const tls = values['tls-cert'] && values['tls-key'] ? { cert: readFileSync(values['tls-cert'], 'utf8'), key: readFileSync(values['tls-key'], 'utf8') } : undefined;
  await serve(values.mode as HttpBenchMode, Number(values.port), values['store-port']!.split(',').map(Number), values.report ?? join(tmpdir(), 'http-bench-serve.json'), tls);
}
