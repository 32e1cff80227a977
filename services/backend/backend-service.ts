import { TlsFileSource } from '../client/client-tls.ts';
import { http } from '../shared/builtins.ts';
import type { Registry } from 'prom-client';
import { ShardedStore, type ShardAddress } from '../client/sharded-store.ts';
import { replyLineBound } from '../protocol/limits.ts';
import { createAdminApp } from '../shared/admin-app.ts';
import { bindError } from '../shared/bind-error.ts';
import { backendSettings, type BackendConfig } from '../config/config.ts';
import { isDiscovery, type StoreDiscovery, type StoreShard } from '../config/store-list.ts';
import { addressName } from '../client/shard-resolver.ts';
import { startShardDiscovery, type ShardDiscovery } from '../client/shard-discovery.ts';
import { ShardResolver } from '../client/shard-resolver.ts';
import { closeServer } from '../shared/close-server.ts';
import { listen } from '../shared/listen.ts';
import type { Logger } from '../shared/logger.ts';
import { createMetricsRegistry } from '../shared/metrics-registry.ts';
import { createBackendApp } from './backend-app.ts';
import { createBackendMetrics, type ShardState } from './backend-metrics.ts';
import { BodyBudget } from './body-budget.ts';
import { startBackendSecurity } from './backend-security.ts';
import { trackHttpConnections } from './http-connections.ts';
import { createHealthChecker, type HealthReport } from './shard-health.ts';
import { startStoreMonitor, type StoreMonitor } from './store-monitor.ts';
import { BACKEND_READY } from '../shared/ready-line.ts';

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
  /** How long a discovery query waits for the DNS server before asking once more (default 2000 ms). */
  readonly discoveryTimeoutMs?: number;
  /** How often BACKEND_TOKENS_FILE and the TLS files are looked at for a change (default 5 s). */
  readonly filePollMs?: number;
}

export interface BackendService {
  readonly port: number;
  readonly metricsPort: number;
  /** The ring over per-shard pools (with one store, a ring of one). */
  readonly ring: ShardedStore;
  readonly registry: Registry;
  /** Probes every shard now: the /healthz report. */
  health(): Promise<HealthReport>;
  /** A new membership while serving (shards that stay keep their pools and in-flight commands). */
  setShards(shards: readonly ShardAddress[]): void;
  readonly monitor: StoreMonitor;
  /**
   * Graceful: readiness fails at once; after config.shutdownDelayMs (responses meanwhile
   * close their connections) stop accepting, answer every request already read (new
   * ones on kept-alive connections get 503), close idle connections, then the shards'
   * pools and the admin port.
   */
  close(): Promise<void>;
  /** Immediate and idempotent. */
  destroy(): void;
  /** Reads BACKEND_TOKENS_FILE and the TLS files again (SIGHUP), keeping every connection. */
  reload(): void;
}

const PROBE_TIMEOUT_MS = 1000;
// Requests still running this long after the listener closed are cut, so that close()
// ends before the entry point's own force-exit (main.ts: the drain delay + 5 s)
// and the shards' pools and the admin port close cleanly.
const SHUTDOWN_GRACE_MS = 4000;

/**
 * The HTTP backend: one ring of per-shard pools shared by every request, the public HTTP
 * port, and the admin port (/metrics, /livez, /readyz, /healthz). It starts whether or
 * not the stores are up; each shard's pool connects and reconnects by itself.
 */
export async function startBackendService(config: BackendConfig, deps: BackendDeps): Promise<BackendService> {
  const { logger } = deps;
  const source = config.store;
  const discovered = isDiscovery(source) ? source : undefined;
  // With discovery the ring starts empty (every request 503, /readyz 503) until a lookup finds members.
  const shards = discovered ? [] : (source as readonly StoreShard[]);
  const resolver = discovered && new ShardResolver({ dnsServer: config.storeDnsServer, timeoutMs: deps.discoveryTimeoutMs });
  let discovery: ShardDiscovery | undefined;
  const registry = deps.registry ?? createMetricsRegistry();
  const bodyBudget = new BodyBudget(config.bodyBufferBytes);
  const metrics = createBackendMetrics({
    registry,
    bodyBudget,
    ring: {
      *shards() {
        for (const s of ring.shards) {
          const state: ShardState = ring.isEjected(s.name) ? 'ejected' : s.pool.up ? 'up' : 'down';
          yield { name: s.name, connections: s.pool.stateCounts(), state };
        }
      },
      ringChanges: () => ring.ringChanges,
    },
    discovery: discovered && {
      failures: () => discovery?.failures ?? 0,
      lastSuccessMs: () => discovery?.lastSuccessMs,
    },
  });
  // A shard's loss and return are logged once each, not per failed request; so is a
  // refused password, until the shard is up again (every reconnect would repeat it).
  const everUp = new Set<string>();
  const refusedPassword = new Set<string>();
  const ring = new ShardedStore({
    shards,
    pool: {
      size: config.storePoolSize,
      timeoutMs: config.storeTimeoutMs,
      maxReplyBytes: replyLineBound(config.maxValueBytes),
      lookup: resolver?.connectLookup,
      password: config.storePassword,
      tls: config.storeTlsFiles && new TlsFileSource(config.storeTlsFiles.files),
    },
    ejectAfter: config.shardEjectAfter,
    retryMs: config.shardRetryMs,
    observerFor: (shard) => metrics.observerFor(shard),
    onRefused: (shard) => metrics.recordRefusedConnection(shard),
    onAuthFailure: (shard, err) => {
      if (refusedPassword.has(shard)) return;
      refusedPassword.add(shard);
      logger.error({ shard, reason: err.message }, 'store shard down: authentication failed (check KV_STORE_PASSWORD or KV_STORE_PASSWORD_FILE)');
    },
    onShardUp: (shard, up) => {
      if (up) {
        refusedPassword.delete(shard);
        logger.info({ shard }, everUp.has(shard) ? 'store shard regained' : 'store shard connected');
        everUp.add(shard);
      } else if (!closing) {
        logger.warn({ shard }, 'store shard lost');
      }
    },
    onRingChange: (change) => {
      const members = change.ring.members.map((m) => m.name);
      if (change.kind === 'members') logger.info({ members }, 'store shards changed');
      else if (change.kind === 'ejected') logger.warn({ shard: change.member.name, members, retryMs: config.shardRetryMs }, 'store shard ejected');
      else logger.info({ shard: change.member.name, members }, 'store shard readmitted');
    },
  });
  // Before anything listens: a tokens file that became unusable since the config read it stops the start.
  const security = startBackendSecurity({ config, registry, logger, pollMs: deps.filePollMs });
  const healthChecker = createHealthChecker(ring, PROBE_TIMEOUT_MS, discovered && `no store shard discovered yet (${backendSettings.store.env}=${discovered.entry})`);

  // draining: shutdown has begun (readiness fails, responses close their connections);
  // closing: the listener is closed too, and new requests get 503.
  let draining = false;
  let closing = false;
  const app = createBackendApp({
    store: ring,
    metrics,
    logger,
    maxValueBytes: config.maxValueBytes,
    bodyTimeoutMs: config.bodyTimeoutMs,
    bodyBudget,
    auth: security.auth,
    isClosing: () => closing,
    isDraining: () => draining,
  });
  const server = security.createServer(app);
  const connections = trackHttpConnections(server, { idleCheckMs: deps.idleCheckMs });
  // `Expect: 100-continue` (curl sends it for large uploads): invite the body only when it
  // will be accepted; an oversized one, one that does not fit the body budget now, or any
  // request during shutdown, is answered at once.
  server.on('checkContinue', (req, res) => {
    const declared = Number(req.headers['content-length']);
    if (!closing && security.auth?.check(req) === undefined && !(declared > config.maxValueBytes) && !(bodyBudget.used + declared > bodyBudget.limit)) res.writeContinue();
    app(req, res);
  });
  // Readiness asks the question a load balancer means: can this backend serve? So the
  // probe runs over the pools the requests use, never over a fresh connection that a
  // full store would refuse while the pools serve. Once shutdown begins it fails, so
  // load balancers stop sending traffic.
  const probe = (): Promise<number> => (draining ? Promise.reject(new Error('shutting down')) : healthChecker.ready());
  const health = async () => {
    if (draining) return { statusCode: 503, body: { status: 'error', error: 'shutting down' } };
    const report = await healthChecker.check();
    return { statusCode: report.status === 'error' ? 503 : 200, body: report };
  };
  const admin = http.createServer(createAdminApp({ registry, probe, health }));

  /**
   * Follows the shards DNS lists: the first members make the ring at once (every backend
   * that starts then agrees on it, whichever shards are up); later a new member joins when
   * its pool is up, one gone from DNS leaves; a member that goes down stays. A change, a
   * run of failures and the recovery are each logged once, not every poll.
   */
  const followDiscovery = (entry: StoreDiscovery, dns: ShardResolver): ShardDiscovery =>
    startShardDiscovery({
      source: entry,
      resolver: dns,
      refreshMs: config.storeRefreshMs,
      onMembers: (members) => {
        const first = ring.shards.length === 0;
        const before = new Set([...ring.shards, ...ring.joining].map((s) => s.name));
        ring.setMembers(members, { joinWhenUp: !first });
        const names = members.map((m) => m.name);
        const added = names.filter((n) => !before.has(n));
        const removed = [...before].filter((n) => !names.includes(n));
        logger.info({ store: entry.entry, members: names, added, removed }, first ? 'store shards discovered' : 'store shards in DNS changed');
        for (const n of names) metrics.observerFor(n); // their series exist from now
        for (const n of removed) metrics.forgetShard(n);
      },
      onRefresh: (members) => {
        // A pod that came back at another address: connections still open to the old one reconnect.
        for (const m of members) {
          if (!m.addresses) continue;
          const moved = ring.shard(m.name)?.pool.leaveUnlessAt(m.addresses) ?? 0;
          if (moved > 0) logger.info({ shard: m.name, addresses: m.addresses }, 'store shard moved; reconnecting');
        }
      },
      onFailure: (err, first) => {
        if (first) logger.warn({ store: entry.entry, reason: err.reason, err: err.message, members: ring.shards.map((s) => s.name) }, 'store discovery failed; keeping the last members');
      },
      onRecovered: (failures) => logger.info({ store: entry.entry, failures }, 'store discovery recovered'),
    });

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
    security.close();
    resolver?.cancel();
    ring.destroy();
    server.close();
    admin.close();
    throw err;
  }

  ring.connect().catch(() => {}); // a store that is down now is retried in the background
  if (discovered && resolver) discovery = followDiscovery(discovered, resolver);
  // The periodic probe behind kvbackend_store_up{shard} and _usage_bytes{shard}; it
  // reports the usage summed over the shards that answered (undefined when none did).
  const monitor = startStoreMonitor({
    probe: async () => {
      const report = await healthChecker.check();
      for (const s of report.shards) metrics.recordProbe(s.name, s.up ? s.usage : undefined);
      if (report.status === 'error') throw new Error('no store shard answered');
      return report.usage;
    },
    onResult: () => {},
    intervalMs: deps.monitorIntervalMs,
  });
  const shardList = discovered ? [discovered.entry] : shards.map((s) => (s.name === s.address ? s.name : `${s.name}=${s.address}`));
  logger.info(
    {
      port,
      metricsPort,
      host: config.host,
      store: shardList.join(','),
      shards: shards.length,
      ...(discovered ? { storeRefreshMs: config.storeRefreshMs, storeDnsServer: config.storeDnsServer && addressName(config.storeDnsServer.host, config.storeDnsServer.port) } : {}),
      poolSize: config.storePoolSize,
      storePassword: config.storePassword !== undefined,
      storeTls: config.storeTlsFiles !== undefined,
      tokens: security.auth !== undefined,
      https: security.https,
      storeTimeoutMs: config.storeTimeoutMs,
      shardEjectAfter: config.shardEjectAfter,
      shardRetryMs: config.shardRetryMs,
      bodyTimeoutMs: config.bodyTimeoutMs,
      bodyBufferBytes: config.bodyBufferBytes,
      shutdownDelayMs: config.shutdownDelayMs,
    },
    BACKEND_READY,
  );

  let closed: Promise<void> | undefined;
  let delayTimer: NodeJS.Timeout | undefined;
  let endDelay = (): void => {};
  return {
    port,
    metricsPort,
    ring,
    registry,
    monitor,
    health: () => healthChecker.check(),
    reload() {
      security.reload('SIGHUP');
    },
    setShards(shards) {
      const gone = ring.shards.filter((s) => !shards.some((n) => n.name === s.name));
      ring.setMembers(shards);
      for (const s of shards) metrics.observerFor(s.name); // their series exist from now
      for (const s of gone) metrics.forgetShard(s.name);
    },
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
        security.close();
        await discovery?.close();
        await connections.drain(deps.shutdownGraceMs ?? SHUTDOWN_GRACE_MS);
        await monitor.close();
        await ring.close();
        const adminClosed = closeServer(admin);
        admin.closeIdleConnections();
        await adminClosed;
        logger.info('kvbackend stopped');
      })();
      return closed;
    },
    destroy() {
      draining = closing = true;
      security.close();
      clearTimeout(delayTimer);
      endDelay();
      connections.destroy();
      admin.closeAllConnections();
      admin.close();
      void monitor.close();
      void discovery?.close();
      ring.destroy();
    },
  };
}
