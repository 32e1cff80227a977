import { createServer } from 'node:http';
import type { Registry } from 'prom-client';
import { StoreTimeoutError } from '../client/errors.ts';
import { StorePool } from '../client/store-pool.ts';
import { createAdminApp } from '../shared/admin-app.ts';
import type { BackendConfig } from '../shared/config.ts';
import { closeServer } from '../shared/close-server.ts';
import { listen } from '../shared/listen.ts';
import type { Logger } from '../shared/logger.ts';
import { createMetricsRegistry } from '../shared/metrics-registry.ts';
import { createBackendApp } from './backend-app.ts';
import { createBackendMetrics } from './backend-metrics.ts';
import { startStoreMonitor, type StoreMonitor } from './store-monitor.ts';

export interface BackendDeps {
  readonly logger: Logger;
  /** A fresh registry (with process metrics) when omitted. */
  readonly registry?: Registry;
  /** How long close() lets in-flight requests run before cutting their connections. */
  readonly shutdownGraceMs?: number;
  /** Period of the USAGE probe behind kvbackend_store_up (SPEC §3: 5 s). */
  readonly monitorIntervalMs?: number;
}

export interface BackendService {
  readonly port: number;
  readonly metricsPort: number;
  readonly pool: StorePool;
  readonly registry: Registry;
  readonly monitor: StoreMonitor;
  /** Graceful: stop accepting, let in-flight requests finish (new ones get 503), then close the pool and the admin port. */
  close(): Promise<void>;
  /** Immediate and idempotent. */
  destroy(): void;
}

const PROBE_TIMEOUT_MS = 1000;
// Requests still running after this are cut, so that close() ends before the entry
// point's own force-exit (run-service.ts, 5 s) and the pool and admin port close cleanly.
const SHUTDOWN_GRACE_MS = 4000;

/** The probe's own time-out (SPEC §3: 1 s), whatever STORE_TIMEOUT_MS is. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`the store did not answer the probe within ${ms} ms`)), ms);
  });
  promise.catch(() => {}); // a late failure after the time-out is already reported
  return Promise.race([promise, timedOut]).finally(() => clearTimeout(timer));
}

/**
 * The HTTP backend: one StorePool shared by every request, the public HTTP port, and
 * the admin port (/metrics, /livez, /readyz, /healthz). It starts whether or not the
 * store is up; the pool connects and reconnects by itself.
 */
export async function startBackendService(config: BackendConfig, deps: BackendDeps): Promise<BackendService> {
  const { logger } = deps;
  const registry = deps.registry ?? createMetricsRegistry();
  const store = config.store;
  const pool = new StorePool({
    host: store.host,
    port: store.port,
    size: config.storePoolSize,
    timeoutMs: config.storeTimeoutMs,
    // A GET reply carries the value in base64: 4 bytes for every 3, plus `VALUE `.
    maxReplyBytes: Math.ceil(config.maxValueBytes / 3) * 4 + 512,
    onRefused: () => metrics.recordRefusedConnection(),
  });
  const metrics = createBackendMetrics({ registry, poolStates: () => pool.stateCounts() });
  pool.observer = metrics.observeCommand;

  let closing = false;
  const app = createBackendApp({ store: pool, metrics, logger, maxValueBytes: config.maxValueBytes, isClosing: () => closing });
  const server = createServer(app);
  // `Expect: 100-continue` (curl sends it for large uploads): invite the body only when it
  // will be accepted; an oversized one, or any request during shutdown, is answered at once.
  server.on('checkContinue', (req, res) => {
    if (!closing && !(Number(req.headers['content-length']) > config.maxValueBytes)) res.writeContinue();
    app(req, res);
  });
  // Readiness asks the question a load balancer means: can this backend serve? So the
  // probe runs over the pool the requests use, never over a fresh connection that a
  // full store would refuse while the pool serves. Once shutdown begins it fails, so
  // load balancers stop sending traffic.
  const probe = (): Promise<number> =>
    closing ? Promise.reject(new Error('shutting down')) : withTimeout(pool.probeUsage(), PROBE_TIMEOUT_MS);
  const admin = createServer(createAdminApp({ registry, probe }));

  let port: number;
  let metricsPort: number;
  try {
    port = await listen(server, config.port, config.host);
    metricsPort = await listen(admin, config.metricsPort, config.host);
  } catch (err) {
    pool.destroy();
    server.close();
    admin.close();
    throw err;
  }

  pool.connect().catch(() => {}); // a store that is down now is retried in the background
  const monitor = startStoreMonitor({ probe, onResult: (usage) => metrics.recordProbe(usage), intervalMs: deps.monitorIntervalMs });
  logger.info({ port, metricsPort, host: config.host, store: `${store.host}:${store.port}`, poolSize: config.storePoolSize }, 'kvbackend ready');

  let closed: Promise<void> | undefined;
  return {
    port,
    metricsPort,
    pool,
    registry,
    monitor,
    close() {
      closed ??= (async () => {
        closing = true;
        logger.info('kvbackend shutting down');
        // server.close() stops accepting and ends idle keep-alive connections; busy ones
        // end after their response (which carries Connection: close while closing).
        const drained = closeServer(server);
        const grace = setTimeout(() => server.closeAllConnections(), deps.shutdownGraceMs ?? SHUTDOWN_GRACE_MS);
        grace.unref();
        await drained;
        clearTimeout(grace);
        await monitor.close();
        await pool.close();
        const adminClosed = closeServer(admin);
        admin.closeIdleConnections();
        await adminClosed;
        logger.info('kvbackend stopped');
      })();
      return closed;
    },
    destroy() {
      closing = true;
      server.closeAllConnections();
      server.close();
      admin.closeAllConnections();
      admin.close();
      void monitor.close();
      pool.destroy();
    },
  };
}
