import { fsPromises, http } from '../shared/builtins.ts';
import type { AddressInfo, Socket } from 'node:net';
import type { Registry } from 'prom-client';
import { probeUsage } from '../client/probe-usage.ts';
import { createAdminApp } from '../shared/admin-app.ts';
import { bindError } from '../shared/bind-error.ts';
import { lineBound } from '../protocol/limits.ts';
import { storeSettings, type StoreConfig } from '../config/config.ts';
import { readPasswords } from '../config/password-settings.ts';
import { closeServer } from '../shared/close-server.ts';
import { listen } from '../shared/listen.ts';
import { warmUpCommandPath } from './runtime/code-warmup.ts';
import type { Logger } from '../shared/logger.ts';
import { createMetricsRegistry } from '../shared/metrics-registry.ts';
import { performance } from 'node:perf_hooks';
import { BackgroundWork } from './engine/background-work.ts';
import { KvEngine } from './engine/kv-engine.ts';
import type { SnapshotFileSystem } from './snapshots/snapshot-file.ts';
import { createSnapshotMetrics } from './snapshots/snapshot-metrics.ts';
import { loadSnapshot, PeriodicSnapshots, saveSnapshot, type SnapshotContext } from './snapshots/store-snapshots.ts';
import { IdleMallocTrim } from './runtime/idle-malloc-trim.ts';
import { collectIdleGarbage } from './runtime/idle-collection.ts';
import { appliedMallocArenaMax, appliedMallocThreshold } from './runtime/malloc-tuning.ts';
import { MappedPageSource, THIS_THREAD_PAGES, ThreadPageSource } from './engine/page-source.ts';
import { createStoreMetrics, registerStartDuration, type StoreMetrics } from './store-metrics.ts';
import { StoreServer } from './network/tcp-server.ts';
import { chooseSocketIo, loadSocketIo } from './network/native-io.ts';
import { PasswordCheck } from './network/password-check.ts';
import type { ClientPeer } from './network/client-socket.ts';
import { PasswordFile } from './password-file.ts';
import { STORE_READY } from '../shared/ready-line.ts';
import { TlsMaterialSource } from '../client/client-tls.ts';
import { secureContextOf, StoreTls } from './store-tls.ts';
import { registerTlsMetrics, TlsMetrics } from './tls-metrics.ts';

export interface StoreDeps {
  readonly logger: Logger;
  /** A fresh registry (with process metrics) when omitted. */
  readonly registry?: Registry;
  /** The engine's monotonic clock in ms (performance.now by default); tests move time with it instead of sleeping. */
  readonly now?: () => number;
  /** How long close() waits for clients to take their last replies before cutting them. */
  readonly shutdownGraceMs?: number;
  /** Wall clock in unix ms for snapshot expiry times (Date.now by default). */
  readonly wallNow?: () => number;
  /** File-system calls of the snapshot code (tests inject a full disk). */
  readonly snapshotFs?: SnapshotFileSystem;
  /** Period of the active expiry sweep (and of the background rehash step). */
  readonly sweepIntervalMs?: number;
  /** How long the store stands idle before a trim of malloc's heaps (default IDLE_TRIM_MS). */
  readonly idleTrimMs?: number;
  /** A connection's time budget per event-loop turn, ms (default TURN_SLICE_MS): a test sets 0 to make every clock check yield. */
  readonly turnSliceMs?: number;
  /** The time per event-loop turn for pipelined work, ms (default TURN_BUDGET_MS): a test sets 0 to make every other pipelining read wait in line. */
  readonly turnBudgetMs?: number;
  /** How long an ended connection waits for its peer's FIN (default LINGER_MS; the native add-on's connections): a test sets a few ms. */
  readonly lingerMs?: number;
  /** How many of V8's background threads main.ts lowered in priority (background-thread-priority.ts), for the ready line. */
  readonly backgroundThreadsLowered?: number;
  /** The V8 flags main.ts set as the store's defaults (those the command line did not give), for the ready line. */
  readonly v8FlagDefaults?: readonly string[];
  /** The store's launch flags (runtime/launch-flags.ts) its command line lacks, for a warning and the ready line. */
  readonly nodeFlagsMissing?: readonly string[];
  /**
   * Ms from the process's start (performance's time origin) until the store's modules were
   * loaded, when this call starts the process's store (run-store.ts): start-up is then timed
   * from the process's start. Omitted (a store in a test's process), from this call.
   */
  readonly modulesLoadedMs?: number;
  /** How often STORE_PASSWORD_FILE is looked at for a change (default WATCH_POLL_MS); a test sets a few ms. */
  readonly passwordPollMs?: number;
  /** How often the TLS certificate, key and CA are looked at for a change (default WATCH_POLL_MS); a test sets a few ms. */
  readonly tlsPollMs?: number;
}

/** Where a store's start-up went, in ms: its ready line's `startup` field. */
export interface StartupTimes {
  /** From the process's start (or from startStoreService's call, in a test's process) to serving. */
  readonly totalMs: number;
  /** Node's own start-up and the loading of the store's modules. */
  readonly modulesMs: number;
  /** The code warm-up (code-warmup.ts). */
  readonly warmupMs: number;
  /** Reading the snapshot into the engine. */
  readonly snapshotLoadMs: number;
  /** The rest: the engine, the listeners, the admin app (and without the add-on the page thread's start). */
  readonly otherMs: number;
}

export interface StoreService {
  readonly port: number;
  readonly metricsPort: number;
  readonly engine: KvEngine;
  readonly registry: Registry;
  readonly metrics: StoreMetrics;
  readonly server: StoreServer;
  /** The expiry sweep and the background rehash step. */
  readonly background: BackgroundWork;
  /** Periodic snapshots, when STORE_SNAPSHOT_INTERVAL_S > 0 (runNow() starts one at once). */
  readonly periodicSnapshots: PeriodicSnapshots | undefined;
  /** The store's TLS counts (undefined without TLS). */
  readonly tlsMetrics: TlsMetrics | undefined;
  /** SIGHUP: reads STORE_PASSWORD_FILE and the TLS files again (connections stay, authenticated ones too). */
  reload(): void;
  /** Graceful: stop accepting, answer what was received, end every socket, close the admin port. */
  close(): Promise<void>;
  /** Immediate and idempotent. */
  destroy(): void;
}

const PROBE_TIMEOUT_MS = 1000;
/**
 * A periodic save walks the keyspace in slices of this many ms, one per turn of the event
 * loop, between the turns' client I/O. Every turn carries a slice while a save runs, so
 * the slice adds straight to each command's latency: under load a 1 ms slice put the p99
 * PING at 3.3 ms and a 0.25 ms slice at 1.8 ms (bench/growth-stall.ts --mode snapshot).
 * A save under load then takes longer (1,000,000 keys under that load: 4 to 5 saves in 8 s
 * rather than 7); an idle store still saves at nearly full speed, its slices following one
 * another.
 */
const SNAPSHOT_SLICE_MS = 0.25;
// Like Redis's cron: ten times a second, an expiry slice of at most 2 ms and a rehash step
// of at most 1 ms; while keys are still due, further slices follow at once with client I/O
// in between (background-work.ts), so expired keys leave USAGE within SPEC's 2 s without
// stalling clients.
const SWEEP_INTERVAL_MS = 100;
/** How long the store stands idle before malloc's free memory goes back to the OS (runtime/idle-malloc-trim.ts). */
const IDLE_TRIM_MS = 1000;
const SWEEP_SLICE_MS = 2;
const REHASH_STEP_MS = 1;

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
  const startedMs = deps.modulesLoadedMs === undefined ? performance.now() : 0;
  const registry = deps.registry ?? createMetricsRegistry();
  // The arena's pages each mapped on its own: by the add-on, else by a thread's malloc (page-source.ts).
  const mmapThreshold = appliedMallocThreshold();
  const arenaMax = appliedMallocArenaMax();
  const addon = loadSocketIo();
  const io = 'io' in addon ? addon.io : undefined;
  const mapPage = io?.mapPage?.bind(io);
  const mappedPages = mapPage === undefined ? undefined : new MappedPageSource(mapPage, io?.releasePage?.bind(io), io?.releaseRange?.bind(io));
  const threadPages =
    mappedPages === undefined && mmapThreshold !== null
      ? new ThreadPageSource({ onFallback: (why) => logger.warn({ why }, 'record pages now come from the serving thread: freed records may stay resident') })
      : undefined;
  const pageSource = mappedPages ?? threadPages ?? THIS_THREAD_PAGES;
  // TLS connections are read and written by Node's TLS stack, never the add-on (it would
  // see ciphertext): with TLS on it is not loaded, and the warm-up runs Node's socket path.
  const socketIo = config.tls === undefined ? chooseSocketIo(config.nativeIo, logger, () => addon) : undefined;
  const createEngine = (): KvEngine =>
    new KvEngine({ maxMemoryBytes: config.maxMemoryBytes, evictionPolicy: config.evictionPolicy, now: deps.now, pageSource });
  const maxLineBytes = lineBound(config.maxValueBytes);
  // The warm-up takes its pages where the store does: its first must not wait for a page thread's start.
  await threadPages?.ready();
  // First of all: the warm-up's scratch engine is made before the real one (see code-warmup.ts).
  const warmup = await warmUpCommandPath({
    keys: config.warmupKeys,
    maxMemoryBytes: config.maxMemoryBytes,
    evictionPolicy: config.evictionPolicy,
    maxValueBytes: config.maxValueBytes,
    maxLineBytes,
    logger,
    socketIo,
    pageSource,
  });
  if (deps.nodeFlagsMissing !== undefined && deps.nodeFlagsMissing.length > 0) {
    logger.warn({ missing: deps.nodeFlagsMissing }, 'the store was started without its Node flags (the image passes them): its young generation may grow to tens of MiB');
  }
  if (warmup.error !== undefined) logger.warn({ err: warmup.error, commands: warmup.commands }, 'warm-up stopped early: the store starts with its code not yet compiled');
  const snapshotMetrics = createSnapshotMetrics(registry, config.snapshotIntervalS);
  const snapshots: SnapshotContext | undefined = config.snapshotPath ? { path: config.snapshotPath, logger, metrics: snapshotMetrics, wallNow: deps.wallNow, fs: deps.snapshotFs } : undefined;
  // The snapshot is loaded before the listener opens: no client sees a half-loaded store.
  const loadStartedMs = performance.now();
  const loaded = snapshots
    ? await loadSnapshot(snapshots, createEngine, { required: config.snapshotRequired, maxValueBytes: config.maxValueBytes })
    : undefined;
  const snapshotLoadMs = snapshots ? performance.now() - loadStartedMs : 0;
  const engine = loaded?.engine ?? createEngine();
  // The self-probe's own sockets. The store recognises the server side of one by its
  // peer address (this process's probe socket), and lets it past MAX_CONNECTIONS.
  const probeSockets = new Set<Socket>();
  const isOwnProbe = (peer: ClientPeer): boolean => {
    for (const s of probeSockets) if (s.localPort === peer.remotePort && s.localAddress === peer.remoteAddress) return true;
    return false;
  };
  const trackProbeSocket = (socket: Socket): void => {
    probeSockets.add(socket);
    socket.once('close', () => probeSockets.delete(socket));
  };
  let server: StoreServer | undefined;
  // The password file's second line, during a rotation, is a previous password still accepted.
  const passwords = config.passwordFile === '' ? { password: config.password, previous: undefined } : readPasswords(config.passwordFile, storeSettings.passwordFile.env);
  const passwordCheck = new PasswordCheck(passwords.password, passwords.previous);
  const metrics = createStoreMetrics({
    registry,
    engine,
    connections: () => server?.connectionCount ?? 0,
    maxConnections: config.maxConnections,
    arenaPages: threadPages,
    arenaPagesMapped: mappedPages !== undefined,
    mallocTrims: () => idleTrim?.trims ?? 0,
    nativeIo: socketIo !== undefined,
  });
  const tlsSettings = config.tls;
  const tlsMetrics = tlsSettings === undefined ? undefined : new TlsMetrics();
  if (tlsMetrics !== undefined) registerTlsMetrics(registry, tlsMetrics);
  server = new StoreServer({
    engine,
    metrics,
    logger,
    maxValueBytes: config.maxValueBytes,
    maxLineBytes,
    maxConnections: config.maxConnections,
    idleTimeoutMs: config.idleTimeoutMs,
    outputStallTimeoutMs: config.outputStallTimeoutMs,
    evictionPolicy: config.evictionPolicy,
    exemptFromLimit: isOwnProbe,
    turnSliceMs: deps.turnSliceMs,
    turnBudgetMs: deps.turnBudgetMs,
    lingerMs: deps.lingerMs,
    socketIo,
    password: passwordCheck,
    tls: tlsSettings && { context: secureContextOf(tlsSettings.material), clientAuth: tlsSettings.clientAuth, metrics: tlsMetrics! },
  });
  const tcp = server;
  const storeTls =
    tlsSettings === undefined
      ? undefined
      : new StoreTls({ settings: tlsSettings, logger, metrics: tlsMetrics!, apply: (context) => tcp.setSecureContext(context), pollMs: deps.tlsPollMs });
  // The probe reaches the store's own listener at its bound address, which the certificate
  // need not name: it checks no server identity, and presents the store's own certificate
  // (the one in use) where client certificates are asked for (SPEC §8).
  const probeTls =
    storeTls === undefined
      ? undefined
      : new TlsMaterialSource(() => {
          const m = storeTls.material;
          return { rejectUnauthorized: false, ...(tlsSettings!.clientAuth === 'none' ? {} : { cert: m.cert, key: m.key?.reveal() }) };
        });

  let closing = false;
  let port = 0;
  // The address the listener is bound to, an IP literal: the probe then connects without
  // a name lookup, so its socket's local port is known by the time the store accepts it.
  let probeHost = '127.0.0.1';
  // The probe goes through the store's own listener, so readiness proves it accepts and
  // answers; MAX_CONNECTIONS does not count it (a full store still serves: it is ready).
  const probe = (): Promise<number> =>
    closing
      ? Promise.reject(new Error('shutting down'))
      : probeUsage({ host: probeHost, port, timeoutMs: PROBE_TIMEOUT_MS, onSocket: trackProbeSocket, password: config.password, tls: probeTls });
  const adminApp = createAdminApp({ registry, probe });
  // Requests to the admin port nudge the idle trim (a scrape compiles code and grows the
  // young generation again) without keeping the store from counting as idle.
  let adminRequests = 0;
  const admin = http.createServer((req, res) => {
    adminRequests++;
    adminApp(req, res);
  });

  let metricsPort: number;
  const hostSetting = { hostEnv: storeSettings.host.env, host: config.host };
  try {
    port = await tcp.listen(config.port, config.host).catch((err: unknown) => {
      throw bindError(err, { ...hostSetting, portEnv: storeSettings.port.env, port: config.port });
    });
    probeHost = selfAddress((tcp.server.address() as AddressInfo).address);
    metricsPort = await listen(admin, config.metricsPort, config.host).catch((err: unknown) => {
      throw bindError(err, { ...hostSetting, portEnv: storeSettings.metricsPort.env, port: config.metricsPort });
    });
  } catch (err) {
    storeTls?.close();
    tcp.destroy();
    admin.close();
    void pageSource.close();
    throw err;
  }

  if (snapshots && loaded?.status === 'loaded' && config.snapshotIntervalS === 0) {
    // Serving makes the loaded file stale: a crash before the next clean stop must find
    // none (a cold cache), never data older than what clients were told (SPEC §7).
    await fsPromises().rm(snapshots.path, { force: true });
    logger.info({ path: snapshots.path }, 'snapshot consumed: the next one is written at shutdown');
  }

  // A periodic snapshot works in slices of about this long, so a client waits at most one.
  const periodicSnapshots =
    snapshots && config.snapshotIntervalS > 0 ? new PeriodicSnapshots(snapshots, engine, config.snapshotIntervalS * 1000, SNAPSHOT_SLICE_MS) : undefined;
  periodicSnapshots?.start();

  const passwordFile =
    config.passwordFile === ''
      ? undefined
      : new PasswordFile({
          path: config.passwordFile,
          env: storeSettings.passwordFile.env,
          check: passwordCheck,
          logger,
          onFailure: () => metrics.passwordReloadFailures++,
          pollMs: deps.passwordPollMs,
        });

  const background = new BackgroundWork({ engine, periodMs: deps.sweepIntervalMs ?? SWEEP_INTERVAL_MS, sliceMs: SWEEP_SLICE_MS, rehashMs: REHASH_STEP_MS });
  background.start();
  const mallocTrim = io?.mallocTrim?.bind(io);
  const idleTrim =
    mallocTrim === undefined
      ? undefined
      : new IdleMallocTrim({
          trim: mallocTrim,
          activity: () => metrics.receivedBytes + metrics.connectionsTotal,
          nudges: () => adminRequests,
          periodMs: deps.idleTrimMs ?? IDLE_TRIM_MS,
          release: (trimOfSpell) => {
            if (trimOfSpell > 0) return;
            engine.releaseSparePages();
            tcp.releaseIdle();
            collectIdleGarbage();
          },
        });
  idleTrim?.start();

  const totalMs = performance.now() - startedMs;
  const modulesMs = deps.modulesLoadedMs ?? 0;
  const ms = (n: number): number => Math.round(n * 10) / 10;
  const startup: StartupTimes = {
    totalMs: ms(totalMs),
    modulesMs: ms(modulesMs),
    warmupMs: ms(warmup.ms),
    snapshotLoadMs: ms(snapshotLoadMs),
    otherMs: ms(Math.max(0, totalMs - modulesMs - warmup.ms - snapshotLoadMs)),
  };
  registerStartDuration(registry, totalMs / 1000);

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
      snapshotPath: config.snapshotPath || undefined,
      snapshotIntervalS: config.snapshotIntervalS,
      snapshotRequired: config.snapshotRequired,
      passwordRequired: config.password !== undefined,
      tls: tlsSettings !== undefined,
      tlsClientAuth: tlsSettings?.clientAuth,
      keys: engine.keyCount,
      warmupCommands: warmup.commands,
      warmupMs: Math.round(warmup.ms),
      mallocMmapThreshold: mmapThreshold?.bytes ?? null,
      mallocMmapThresholdSetBy: mmapThreshold?.source ?? null,
      mallocArenaMax: arenaMax?.arenas ?? null,
      mallocArenaMaxSetBy: arenaMax?.source ?? null,
      arenaPagesMapped: mappedPages !== undefined,
      arenaPagesThreaded: threadPages?.threaded ?? false,
      nativeIo: socketIo !== undefined,
      backgroundThreadsLowered: deps.backgroundThreadsLowered,
      v8FlagDefaults: deps.v8FlagDefaults,
      nodeFlagsMissing: deps.nodeFlagsMissing,
      startup,
    },
    STORE_READY,
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
    background,
    periodicSnapshots,
    tlsMetrics,
    reload() {
      passwordFile?.reload('SIGHUP');
      storeTls?.reload('SIGHUP');
      if (!passwordFile && !storeTls) logger.info('nothing to reload: no STORE_PASSWORD_FILE nor STORE_TLS_CERT_FILE');
    },
    close() {
      closed ??= (async () => {
        closing = true;
        passwordFile?.close();
        storeTls?.close();
        background.stop();
        idleTrim?.close();
        logger.info({ connections: tcp.connectionCount }, 'kvstore shutting down');
        try {
          await tcp.close(deps.shutdownGraceMs ?? 3000);
          // Every reply is out and no client is left: a periodic snapshot under way is
          // abandoned, and the final one holds every acknowledged write.
          await periodicSnapshots?.stop();
          if (snapshots) await saveSnapshot(snapshots, engine);
        } finally {
          await closeServer(admin);
          await pageSource.close();
        }
        logger.info('kvstore stopped');
      })();
      return closed;
    },
    destroy() {
      if (destroyed) return;
      destroyed = closing = true;
      passwordFile?.close();
      storeTls?.close();
      background.stop();
      idleTrim?.close();
      void periodicSnapshots?.stop();
      tcp.destroy();
      admin.closeAllConnections();
      admin.close();
      void pageSource.close();
    },
  };
}
