import { createServer } from 'node:http';
import type { Registry } from 'prom-client';
import { StoreTimeoutError } from '../client/errors.ts';
import { StorePool } from '../client/store-pool.ts';
import { createAdminApp } from '../shared/admin-app.ts';
import { bindError } from '../shared/bind-error.ts';
import { backendSettings, type BackendConfig } from '../shared/config.ts';
import { closeServer } from '../shared/close-server.ts';
import { listen } from '../shared/listen.ts';
import type { Logger } from '../shared/logger.ts';
import { createMetricsRegistry } from '../shared/metrics-registry.ts';
import { createBackendApp } from './backend-app.ts';
import { createBackendMetrics } from './backend-metrics.ts';
import { BodyBudget } from './body-budget.ts';
import { trackHttpConnections } from './http-connections.ts';
import { startStoreMonitor, type StoreMonitor } from './store-monitor.ts';

export interface BackendDeps {
  readonly logger: Logger;
  /** A fresh registry (with process metrics) when omitted. */
  readonly registry?: Registry;
  /** How long close() lets in-flight requests run, once the listener is closed, before cutting their connections. */
  readonly shutdownGraceMs?: number;
  /** How often shutdown looks for idle connections to close (each must stay idle one whole interval). */
  readonly idleCheckMs?: number;
  /** Period of the USAGE probe behind kvbackend_store_up (SPEC §3: 5 s). */
  readonly monitorIntervalMs?: number;
}

export interface BackendService {
  readonly port: number;
  readonly metricsPort: number;
  readonly pool: StorePool;
  readonly registry: Registry;
  readonly monitor: StoreMonitor;
  /**
   * Graceful: readiness fails at once; after config.shutdownDelayMs (responses meanwhile
   * close their connections) stop accepting, answer every request already read (new
   * ones on kept-alive connections get 503), close idle connections, then the pool and
   * the admin port.
   */
  close(): Promise<void>;
  /** Immediate and idempotent. */
  destroy(): void;
}

const PROBE_TIMEOUT_MS = 1000;
// Requests still running this long after the listener closed are cut, so that close()
// ends before the entry point's own force-exit (run-service.ts: the drain delay + 5 s)
// and the pool and admin port close cleanly.
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
  const bodyBudget = new BodyBudget(config.bodyBufferBytes);
  const metrics = createBackendMetrics({ registry, poolStates: () => pool.stateCounts(), bodyBuffer: bodyBudget });
  pool.observer = metrics.observeCommand;

  // draining: shutdown has begun (readiness fails, responses close their connections);
  // closing: the listener is closed too, and new requests get 503.
  let draining = false;
  let closing = false;
  const app = createBackendApp({
    store: pool,
    metrics,
    logger,
    maxValueBytes: config.maxValueBytes,
    bodyTimeoutMs: config.bodyTimeoutMs,
    bodyBudget,
    isClosing: () => closing,
    isDraining: () => draining,
  });
  const server = createServer(app);
  const connections = trackHttpConnections(server, { idleCheckMs: deps.idleCheckMs });
  // `Expect: 100-continue` (curl sends it for large uploads): invite the body only when it
  // will be accepted; an oversized one, one that does not fit the body budget now, or any
  // request during shutdown, is answered at once.
  server.on('checkContinue', (req, res) => {
    const declared = Number(req.headers['content-length']);
    if (!closing && !(declared > config.maxValueBytes) && !(bodyBudget.used + declared > bodyBudget.limit)) res.writeContinue();
    app(req, res);
  });
  // Readiness asks the question a load balancer means: can this backend serve? So the
  // probe runs over the pool the requests use, never over a fresh connection that a
  // full store would refuse while the pool serves. Once shutdown begins it fails, so
  // load balancers stop sending traffic.
  const probe = (): Promise<number> =>
    draining ? Promise.reject(new Error('shutting down')) : withTimeout(pool.probeUsage(), PROBE_TIMEOUT_MS);
  const admin = createServer(createAdminApp({ registry, probe }));

  let port: number;
  let metricsPort: number;
  const hostSetting = { hostEnv: backendSettings.host.env, host: config.host };
  try {
    port = await listen(server, config.port, config.host).catch((err: unknown) => {
      throw bindError(err, { ...hostSetting, portEnv: backendSettings.port.env, port: config.port });
    });
    metricsPort = await listen(admin, config.metricsPort, config.host).catch((err: unknown) => {
      throw bindError(err, { ...hostSetting, portEnv: backendSettings.metricsPort.env, port: config.metricsPort });
    });
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
  let delayTimer: NodeJS.Timeout | undefined;
  let endDelay = (): void => {};
  return {
    port,
    metricsPort,
    pool,
    registry,
    monitor,
    close() {
      closed ??= (async () => {
        draining = true;
        const delayMs = config.shutdownDelayMs;
        logger.info({ delayMs, connections: connections.size }, 'kvbackend shutting down');
        // Readiness fails now; the listener stays open for the delay, so an orchestrator
        // can take this backend out of its load balancer before anything is refused.
        if (delayMs > 0) {
          await new Promise<void>((resolve) => {
            endDelay = resolve; // destroy() ends the delay early
            delayTimer = setTimeout(resolve, delayMs);
          });
        }
        closing = true;
        await connections.drain(deps.shutdownGraceMs ?? SHUTDOWN_GRACE_MS);
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
      draining = closing = true;
      clearTimeout(delayTimer);
      endDelay();
      connections.destroy();
      admin.closeAllConnections();
      admin.close();
      void monitor.close();
      pool.destroy();
    },
  };
}
