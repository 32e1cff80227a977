import { createServer } from 'node:http';
import type { Registry } from 'prom-client';
import { probeUsage } from '../client/probe-usage.ts';
import { createAdminApp } from '../shared/admin-app.ts';
import { lineBound, type StoreConfig } from '../shared/config.ts';
import { closeServer } from '../shared/close-server.ts';
import { listen } from '../shared/listen.ts';
import type { Logger } from '../shared/logger.ts';
import { createMetricsRegistry } from '../shared/metrics-registry.ts';
import { KvEngine } from './kv-engine.ts';
import { createStoreMetrics, type StoreMetrics } from './store-metrics.ts';
import { StoreServer } from './store-server.ts';

export interface StoreDeps {
  readonly logger: Logger;
  /** A fresh registry (with process metrics) when omitted. */
  readonly registry?: Registry;
  /** The engine's clock in ms (Date.now by default); tests move time with it instead of sleeping. */
  readonly now?: () => number;
  /** How long close() waits for clients to take their last replies before cutting them. */
  readonly shutdownGraceMs?: number;
  /** Period of the active expiry sweep. */
  readonly sweepIntervalMs?: number;
}

export interface StoreService {
  readonly port: number;
  readonly metricsPort: number;
  readonly engine: KvEngine;
  readonly registry: Registry;
  readonly metrics: StoreMetrics;
  readonly server: StoreServer;
  /** Graceful: stop accepting, answer what was received, end every socket, close the admin port. */
  close(): Promise<void>;
  /** Immediate and idempotent. */
  destroy(): void;
}

const PROBE_TIMEOUT_MS = 1000;
// Like Redis's active expiry: ten sweeps a second, each a few ms of work at most, so
// expired keys leave USAGE well within SPEC's 2 s without stalling clients.
const SWEEP_INTERVAL_MS = 100;
const SWEEP_BUDGET_MS = 3;

/** The address the store reaches itself at: a wildcard bind is probed on loopback. */
function selfAddress(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}

/**
 * The store: engine, TCP line protocol, admin port (/metrics, /livez, /readyz, /healthz)
 * and the active expiry sweep. Logs one `kvstore ready` line once both ports listen.
 */
export async function startStoreService(config: StoreConfig, deps: StoreDeps): Promise<StoreService> {
  const { logger } = deps;
  const registry = deps.registry ?? createMetricsRegistry();
  const engine = new KvEngine({ maxMemoryBytes: config.maxMemoryBytes, evictionPolicy: config.evictionPolicy, now: deps.now });
  let server: StoreServer | undefined;
  const metrics = createStoreMetrics({ registry, engine, connections: () => server?.connectionCount ?? 0, maxConnections: config.maxConnections });
  server = new StoreServer({
    engine,
    metrics,
    logger,
    maxValueBytes: config.maxValueBytes,
    maxLineBytes: lineBound(config.maxValueBytes),
    maxConnections: config.maxConnections,
    idleTimeoutMs: config.idleTimeoutMs,
    outputStallTimeoutMs: config.outputStallTimeoutMs,
    evictionPolicy: config.evictionPolicy,
  });
  const tcp = server;

  let closing = false;
  let port = 0;
  // The probe goes through the store's own listener, so readiness proves it accepts and answers.
  const probe = (): Promise<number> =>
    closing ? Promise.reject(new Error('shutting down')) : probeUsage({ host: selfAddress(config.host), port, timeoutMs: PROBE_TIMEOUT_MS });
  const admin = createServer(createAdminApp({ registry, probe }));

  let metricsPort: number;
  try {
    port = await tcp.listen(config.port, config.host);
    metricsPort = await listen(admin, config.metricsPort, config.host);
  } catch (err) {
    tcp.destroy();
    admin.close();
    throw err;
  }

  const sweep = setInterval(() => engine.sweepExpired(SWEEP_BUDGET_MS), deps.sweepIntervalMs ?? SWEEP_INTERVAL_MS);
  sweep.unref();

  logger.info(
    {
      host: config.host,
      port,
      metricsPort,
      maxMemoryBytes: config.maxMemoryBytes,
      evictionPolicy: config.evictionPolicy,
      maxConnections: config.maxConnections,
      idleTimeoutMs: config.idleTimeoutMs,
      outputStallTimeoutMs: config.outputStallTimeoutMs,
      maxValueBytes: config.maxValueBytes,
    },
    'kvstore ready',
  );

  let closed: Promise<void> | undefined;
  let destroyed = false;
  return {
    port,
    metricsPort,
    engine,
    registry,
    metrics,
    server: tcp,
    close() {
      closed ??= (async () => {
        closing = true;
        clearInterval(sweep);
        logger.info({ connections: tcp.connectionCount }, 'kvstore shutting down');
        await tcp.close(deps.shutdownGraceMs ?? 3000);
        await closeServer(admin);
        logger.info('kvstore stopped');
      })();
      return closed;
    },
    destroy() {
      if (destroyed) return;
      destroyed = closing = true;
      clearInterval(sweep);
      tcp.destroy();
      admin.closeAllConnections();
      admin.close();
    },
  };
}
