import type { Registry } from 'prom-client';
import { Counter, Gauge } from '../shared/prometheus.ts';
import { errorKind, StoreArgumentError, StoreError, StoreMaxConnectionsError, StoreReplyError } from '../client/errors.ts';
import type { CommandObserver, CommandResult } from '../client/store-commands.ts';
import type { ConnectionState } from '../client/store-connection.ts';
import { FastHistogram } from './fast-histogram.ts';
import type { BodyRefusal } from './request-body.ts';
import { AUTH_FAILURES, type AuthFailure } from './bearer-auth.ts';

/** What the backend records (SPEC §4, §6); every label value comes from a fixed set or the configured shard names. */
export interface BackendMetrics {
  /** One HTTP response, `seconds` after the request arrived. */
  recordRequest(method: string, status: number, seconds: number): void;
  /** The observer of one shard's pool: kvbackend_store_commands_total{shard}, _duration_seconds, _errors_total{shard}. */
  observerFor(shard: string): CommandObserver;
  /** A request body refused: over MAX_VALUE_BYTES, not received within BODY_TIMEOUT_MS, or past BODY_BUFFER_BYTES. */
  recordBodyRefusal(reason: BodyRefusal): void;
  /** A request refused for its Authorization header (401, or 403 for a read token writing). */
  recordAuthFailure(reason: AuthFailure): void;
  /** The shard refused one of its pool's connections at its MAX_CONNECTIONS. */
  recordRefusedConnection(shard: string): void;
  /** A shard's periodic USAGE probe: usage in bytes, or undefined when it failed. */
  recordProbe(shard: string, usage: number | undefined): void;
  /** A shard left the configuration: its gauges go (its counters stay, as counters do). */
  forgetShard(shard: string): void;
}

/** The live state of the ring, read at scrape time. */
export interface RingView {
  /** Each configured shard's name, its pool's connection states, and whether it is up, down or ejected. */
  shards(): Iterable<{ readonly name: string; readonly connections: Record<ConnectionState, number>; readonly state: ShardState }>;
  /** Rings swapped in since start-up (ejections, readmissions, membership changes). */
  ringChanges(): number;
}

/** The state of DNS discovery, read at scrape time. */
export interface DiscoveryView {
  /** Lookups that failed, timed out or found nothing, since start-up. */
  failures(): number;
  /** When a lookup last found members, in ms since the epoch; undefined until one has. */
  lastSuccessMs(): number | undefined;
}

export type ShardState = 'up' | 'down' | 'ejected';
const SHARD_STATES: readonly ShardState[] = ['up', 'down', 'ejected'];

export interface BackendMetricsOptions {
  readonly registry: Registry;
  /** The ring's shards and changes, read at scrape time. */
  readonly ring?: RingView;
  /** DNS discovery of the shards (SPEC §6), read at scrape time; absent with a list of shards. */
  readonly discovery?: DiscoveryView;
  /** The request-body budget (BODY_BUFFER_BYTES), read at scrape time. */
  readonly bodyBudget?: { readonly used: number; readonly limit: number };
}

// Sub-millisecond buckets: a cache hit on a local store takes well under 1 ms.
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'] as const;
const STORE_COMMANDS = ['GET', 'SET', 'SETEX', 'DELETE', 'USAGE', 'PING', 'TTL', 'EXPIRE', 'STATS'] as const;
const CONNECTION_STATES: readonly ConnectionState[] = ['idle', 'connecting', 'connected', 'disconnected', 'closed'];

/** The `method` label: a known method, or OTHER (so a client cannot mint series). */
export function methodLabel(method: string): string {
  return (HTTP_METHODS as readonly string[]).includes(method) ? method : 'OTHER';
}

/** A count kept in a plain object on the hot path and handed to prom-client at scrape time. */
interface Tally {
  readonly labels: Record<string, string>;
  n: number;
}

/** A prom-client Counter whose value is read from tallies in collect() (its public hook for live values). */
function tallyCounter(name: string, help: string, labelNames: readonly string[], registry: Registry, tallies: () => Iterable<Tally>): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const t of tallies()) this.inc(t.labels, t.n);
    },
  });
}

interface MethodSeries {
  readonly byStatus: Map<number, Tally>;
  readonly observe: (seconds: number) => void;
}

interface CommandSeries {
  readonly results: Record<CommandResult, Tally>;
  readonly observe: (seconds: number) => void;
}

type ErrorKind = 'timeout' | 'unavailable' | 'protocol' | 'max_connections';

/** One shard's counters, made once when the shard is first seen. */
interface ShardSeries {
  readonly commands: Map<string, CommandSeries>;
  readonly unknown: CommandSeries;
  readonly errors: Record<ErrorKind, Tally>;
  readonly observer: CommandObserver;
}

/**
 * Registers the backend's metrics on the given registry (one per service instance).
 * Recording a request or a store command touches only plain objects made once per
 * label set: no label hashing or allocation per request (prom-client's labelled
 * inc/observe cost about 2 µs of a request's 25 µs of CPU; these, under 1.1 µs: see
 * docs/benchmarks.md#the-http-path). prom-client reads the totals when it is scraped.
 */
export function createBackendMetrics({ registry, ring, bodyBudget, discovery }: BackendMetricsOptions): BackendMetrics {
  const httpDuration = new FastHistogram({
    name: 'kvbackend_http_request_duration_seconds',
    help: 'Time from request arrival to the end of the response, in seconds.',
    labelNames: ['method'],
    buckets: BUCKETS,
    registry,
  });
  const methods = new Map<string, MethodSeries>();
  for (const method of [...HTTP_METHODS, 'OTHER']) {
    methods.set(method, { byStatus: new Map(), observe: httpDuration.recorder({ method }) });
  }
  const other = methods.get('OTHER')!;
  tallyCounter('kvbackend_http_requests_total', 'HTTP requests answered, by method and status code.', ['method', 'status'], registry, function* () {
    for (const m of methods.values()) yield* m.byStatus.values();
  });

  const storeDuration = new FastHistogram({
    name: 'kvbackend_store_command_duration_seconds',
    help: 'Round trip of a store command as seen by the backend, in seconds.',
    labelNames: ['command'],
    buckets: BUCKETS,
    registry,
  });
  const storeUp = new Gauge({ name: 'kvbackend_store_up', help: '1 when the last USAGE probe of the shard succeeded, else 0.', labelNames: ['shard'], registers: [registry] });
  const storeUsage = new Gauge({ name: 'kvbackend_store_usage_bytes', help: 'Bytes held by the shard, from its last successful USAGE probe.', labelNames: ['shard'], registers: [registry] });
  const byShard = new Map<string, ShardSeries>();
  const shardSeries = (shard: string): ShardSeries => {
    let series = byShard.get(shard);
    if (series) return series;
    const commands = new Map<string, CommandSeries>();
    for (const command of [...STORE_COMMANDS, 'UNKNOWN']) {
      const tally = (result: CommandResult): Tally => ({ labels: { command, result, shard }, n: 0 });
      commands.set(command, { results: { ok: tally('ok'), not_found: tally('not_found'), error: tally('error') }, observe: storeDuration.recorder({ command }) });
    }
    const unknown = commands.get('UNKNOWN')!;
    // Alerts read these from the start: every kind exists at zero. max_connections counts
    // refused connections (once each), not the commands that failed with one.
    const kind = (k: ErrorKind): Tally => ({ labels: { kind: k, shard }, n: 0 });
    const errors = { timeout: kind('timeout'), unavailable: kind('unavailable'), protocol: kind('protocol'), max_connections: kind('max_connections') };
    const observer: CommandObserver = (command, result, seconds, error) => {
      const c = commands.get(command) ?? unknown;
      c.results[result].n++;
      c.observe(seconds);
      // ERROR replies are the store answering, not a transport failure: counted by result only.
      // A refused connection is counted once as max_connections, not per command. An error that is
      // none of the store's (a bug, an argument the client refused) is not a store error at all.
      if (error instanceof StoreError && !(error instanceof StoreReplyError) && !(error instanceof StoreMaxConnectionsError) && !(error instanceof StoreArgumentError)) {
        errors[errorKind(error)].n++;
      }
    };
    series = { commands, unknown, errors, observer };
    byShard.set(shard, series);
    // Up and usage exist from the start (0 until the first probe answers).
    storeUp.set({ shard }, 0);
    storeUsage.set({ shard }, 0);
    return series;
  };
  tallyCounter(
    'kvbackend_store_commands_total',
    'Store commands sent by the backend, by command, result (ok, not_found, error) and shard.',
    ['command', 'result', 'shard'],
    registry,
    function* () {
      // A series appears with its first command, as prom-client's own counters do.
      for (const s of byShard.values()) for (const c of s.commands.values()) for (const t of Object.values(c.results)) if (t.n > 0) yield t;
    },
  );
  tallyCounter(
    'kvbackend_store_errors_total',
    'Failed store commands by kind (timeout, unavailable, protocol) and shard, and pool connections a shard refused at its MAX_CONNECTIONS (max_connections).',
    ['kind', 'shard'],
    registry,
    function* () {
      for (const s of byShard.values()) yield* Object.values(s.errors);
    },
  );

  // Every reason exists at zero, for alerts.
  const bodyRefusals: Record<BodyRefusal, Tally> = {
    too_large: { labels: { reason: 'too_large' }, n: 0 },
    timeout: { labels: { reason: 'timeout' }, n: 0 },
    buffer_full: { labels: { reason: 'buffer_full' }, n: 0 },
  };
  tallyCounter(
    'kvbackend_http_body_refusals_total',
    'Request bodies refused, by reason: too_large (413, over MAX_VALUE_BYTES), timeout (408, BODY_TIMEOUT_MS), buffer_full (503, BODY_BUFFER_BYTES).',
    ['reason'],
    registry,
    () => Object.values(bodyRefusals),
  );
  const authFailures = new Map<AuthFailure, Tally>(AUTH_FAILURES.map((reason) => [reason, { labels: { reason }, n: 0 }]));
  tallyCounter(
    'kvbackend_auth_failures_total',
    'Requests refused by BACKEND_TOKENS_FILE, by reason: missing (401, no Bearer token), unknown (401, a token not in the file), scope (403, a read token on a write method).',
    ['reason'],
    registry,
    () => authFailures.values(),
  );
  if (bodyBudget) {
    new Gauge({
      name: 'kvbackend_http_body_buffered_bytes',
      help: 'Request-body bytes held right now by bodies being read (declared lengths count whole).',
      registers: [registry],
      collect() {
        this.set(bodyBudget.used);
      },
    });
    new Gauge({
      name: 'kvbackend_http_body_buffer_limit_bytes',
      help: 'BODY_BUFFER_BYTES: the request-body bytes the backend holds at most; past it a body is refused with 503.',
      registers: [registry],
      collect() {
        this.set(bodyBudget.limit);
      },
    });
  }

  new Gauge({
    name: 'kvbackend_store_pool_connections',
    help: 'Connections of each shard\'s store pool, by state.',
    labelNames: ['state', 'shard'],
    registers: [registry],
    collect() {
      if (!ring) return;
      this.reset();
      for (const { name, connections } of ring.shards()) for (const state of CONNECTION_STATES) this.set({ state, shard: name }, connections[state]);
    },
  });
  new Gauge({
    name: 'kvbackend_store_shards',
    help: 'Configured store shards by state: up (its pool serves), down (unreachable or silent), ejected (out of the ring for SHARD_RETRY_MS).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      if (!ring) return;
      const counts: Record<ShardState, number> = { up: 0, down: 0, ejected: 0 };
      for (const { state } of ring.shards()) counts[state]++;
      for (const state of SHARD_STATES) this.set({ state }, counts[state]);
    },
  });
  new Counter({
    name: 'kvbackend_store_ring_changes_total',
    help: 'Rings swapped in since start-up: a shard ejected or readmitted, or the membership changed.',
    registers: [registry],
    collect() {
      if (!ring) return;
      this.reset();
      this.inc(ring.ringChanges());
    },
  });

  if (discovery) {
    new Counter({
      name: 'kvbackend_store_discovery_failures_total',
      help: 'DNS discovery lookups of the store shards (KV_STORE=dnssrv+ or dns+) that failed, timed out or found nothing; each keeps the last members.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(discovery.failures());
      },
    });
    new Gauge({
      name: 'kvbackend_store_discovery_last_success_timestamp_seconds',
      help: 'When a DNS discovery lookup of the store shards last found members, in seconds since the epoch; 0 until one has.',
      registers: [registry],
      collect() {
        this.set((discovery.lastSuccessMs() ?? 0) / 1000);
      },
    });
  }

  return {
    recordRequest(method, status, seconds) {
      const m = methods.get(method) ?? other;
      let tally = m.byStatus.get(status);
      if (!tally) {
        // Statuses come from the app's own fixed set, so this map stays small.
        tally = { labels: { method: methods.has(method) ? method : 'OTHER', status: String(status) }, n: 0 };
        m.byStatus.set(status, tally);
      }
      tally.n++;
      m.observe(seconds);
    },

    observerFor(shard) {
      return shardSeries(shard).observer;
    },

    recordBodyRefusal(reason) {
      bodyRefusals[reason].n++;
    },

    recordAuthFailure(reason) {
      authFailures.get(reason)!.n++;
    },

    recordRefusedConnection(shard) {
      shardSeries(shard).errors.max_connections.n++;
    },

    recordProbe(shard, usage) {
      shardSeries(shard);
      if (usage === undefined) {
        storeUp.set({ shard }, 0);
      } else {
        storeUp.set({ shard }, 1);
        storeUsage.set({ shard }, usage);
      }
    },

    forgetShard(shard) {
      storeUp.remove({ shard });
      storeUsage.remove({ shard });
    },
  };
}
