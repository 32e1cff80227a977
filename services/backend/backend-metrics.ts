import { Counter, Gauge, type Registry } from 'prom-client';
import { errorKind, StoreMaxConnectionsError, StoreReplyError } from '../client/errors.ts';
import type { CommandObserver, CommandResult } from '../client/store-commands.ts';
import type { ConnectionState } from '../client/store-connection.ts';
import type { BodyRefusal } from './backend-app.ts';
import { FastHistogram } from './fast-histogram.ts';

/** What the backend records (SPEC §4); every label value comes from a fixed set. */
export interface BackendMetrics {
  /** One HTTP response, `seconds` after the request arrived. */
  recordRequest(method: string, status: number, seconds: number): void;
  /** Hook for StorePool.observer: kvbackend_store_commands_total, _duration_seconds, _errors_total. */
  readonly observeCommand: CommandObserver;
  /** A request body refused: over MAX_VALUE_BYTES, not received within BODY_TIMEOUT_MS, or past BODY_BUFFER_BYTES. */
  recordBodyRefusal(reason: BodyRefusal): void;
  /** The store refused one of the pool's connections at its MAX_CONNECTIONS. */
  recordRefusedConnection(): void;
  /** The periodic USAGE probe's outcome: usage in bytes, or undefined when it failed. */
  recordProbe(usage: number | undefined): void;
}

export interface BackendMetricsOptions {
  readonly registry: Registry;
  /** Live connection states of the pool, read at scrape time. */
  readonly poolStates?: () => Record<ConnectionState, number>;
  /** The request-body budget (BODY_BUFFER_BYTES), read at scrape time. */
  readonly bodyBuffer?: { readonly used: number; readonly limit: number };
}

// Sub-millisecond buckets: a cache hit on a local store takes well under 1 ms.
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'] as const;
const STORE_COMMANDS = ['GET', 'SET', 'SETEX', 'DELETE', 'USAGE', 'PING', 'TTL', 'EXPIRE', 'STATS'] as const;
const POOL_STATES: readonly ConnectionState[] = ['idle', 'connecting', 'connected', 'disconnected', 'closed'];

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

/**
 * Registers the backend's metrics on the given registry (one per service instance).
 * Recording a request or a store command touches only plain objects made once per
 * label set: no label hashing or allocation per request (prom-client's inc/observe
 * with labels cost about 2 µs per request together, measured, on a request that
 * costs about 25 µs). prom-client reads the totals when it is scraped.
 */
export function createBackendMetrics({ registry, poolStates, bodyBuffer }: BackendMetricsOptions): BackendMetrics {
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
  const commands = new Map<string, CommandSeries>();
  for (const command of [...STORE_COMMANDS, 'UNKNOWN']) {
    const tally = (result: CommandResult): Tally => ({ labels: { command, result }, n: 0 });
    commands.set(command, { results: { ok: tally('ok'), not_found: tally('not_found'), error: tally('error') }, observe: storeDuration.recorder({ command }) });
  }
  const unknown = commands.get('UNKNOWN')!;
  tallyCounter('kvbackend_store_commands_total', 'Store commands sent by the backend, by command and result (ok, not_found, error).', ['command', 'result'], registry, function* () {
    // A series appears with its first command, as prom-client's own counters do.
    for (const c of commands.values()) for (const t of Object.values(c.results)) if (t.n > 0) yield t;
  });

  // Alerts read these from the start: every kind exists at zero. max_connections counts
  // refused connections (once each), not the commands that failed with one.
  const errorKinds = {
    timeout: { labels: { kind: 'timeout' }, n: 0 },
    unavailable: { labels: { kind: 'unavailable' }, n: 0 },
    protocol: { labels: { kind: 'protocol' }, n: 0 },
    max_connections: { labels: { kind: 'max_connections' }, n: 0 },
  };
  tallyCounter(
    'kvbackend_store_errors_total',
    'Failed store commands by kind (timeout, unavailable, protocol), and pool connections the store refused at its MAX_CONNECTIONS (max_connections).',
    ['kind'],
    registry,
    () => Object.values(errorKinds),
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
  if (bodyBuffer) {
    new Gauge({
      name: 'kvbackend_http_body_buffered_bytes',
      help: 'Request-body bytes held right now by bodies being read (declared lengths count whole).',
      registers: [registry],
      collect() {
        this.set(bodyBuffer.used);
      },
    });
    new Gauge({
      name: 'kvbackend_http_body_buffer_limit_bytes',
      help: 'BODY_BUFFER_BYTES: the request-body bytes the backend holds at most; past it a body is refused with 503.',
      registers: [registry],
      collect() {
        this.set(bodyBuffer.limit);
      },
    });
  }

  const storeUp = new Gauge({ name: 'kvbackend_store_up', help: '1 when the last USAGE probe of the store succeeded, else 0.', registers: [registry] });
  const storeUsage = new Gauge({ name: 'kvbackend_store_usage_bytes', help: 'Bytes held by the store, from the last successful USAGE probe.', registers: [registry] });
  storeUp.set(0);
  storeUsage.set(0);
  new Gauge({
    name: 'kvbackend_store_pool_connections',
    help: 'Connections of the store pool, by state.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      if (!poolStates) return;
      const counts = poolStates();
      for (const state of POOL_STATES) this.set({ state }, counts[state]);
    },
  });

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

    observeCommand(command, result, seconds, error) {
      const c = commands.get(command) ?? unknown;
      c.results[result].n++;
      c.observe(seconds);
      // ERROR replies are the store's answer, not a transport failure: counted by result only.
      if (error !== undefined && !(error instanceof StoreReplyError) && !(error instanceof StoreMaxConnectionsError)) errorKinds[errorKind(error)].n++;
    },

    recordBodyRefusal(reason) {
      bodyRefusals[reason].n++;
    },

    recordRefusedConnection() {
      errorKinds.max_connections.n++;
    },

    recordProbe(usage) {
      if (usage === undefined) {
        storeUp.set(0);
      } else {
        storeUp.set(1);
        storeUsage.set(usage);
      }
    },
  };
}
