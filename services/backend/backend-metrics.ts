import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { errorKind, StoreReplyError } from '../client/errors.ts';
import type { CommandObserver } from '../client/store-commands.ts';
import type { ConnectionState } from '../client/store-connection.ts';

/** What the backend records (SPEC §4); every label value comes from a fixed set. */
export interface BackendMetrics {
  /** One HTTP response, `seconds` after the request arrived. */
  recordRequest(method: string, status: number, seconds: number): void;
  /** Hook for StorePool.observer: kvbackend_store_commands_total, _duration_seconds, _errors_total. */
  readonly observeCommand: CommandObserver;
  /** The periodic USAGE probe's outcome: usage in bytes, or undefined when it failed. */
  recordProbe(usage: number | undefined): void;
}

export interface BackendMetricsOptions {
  readonly registry: Registry;
  /** Live connection states of the pool, read at scrape time. */
  readonly poolStates?: () => Record<ConnectionState, number>;
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

function commandLabel(command: string): string {
  return (STORE_COMMANDS as readonly string[]).includes(command) ? command : 'UNKNOWN';
}

/**
 * Registers the backend's metrics on the given registry (one per service instance).
 * Label objects are built once per label set and reused, so recording allocates nothing.
 */
export function createBackendMetrics({ registry, poolStates }: BackendMetricsOptions): BackendMetrics {
  const registers = [registry];
  const httpRequests = new Counter({
    name: 'kvbackend_http_requests_total',
    help: 'HTTP requests answered, by method and status code.',
    labelNames: ['method', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'kvbackend_http_request_duration_seconds',
    help: 'Time from request arrival to the end of the response, in seconds.',
    labelNames: ['method'] as const,
    buckets: BUCKETS,
    registers,
  });
  const storeCommands = new Counter({
    name: 'kvbackend_store_commands_total',
    help: 'Store commands sent by the backend, by command and result (ok, not_found, error).',
    labelNames: ['command', 'result'] as const,
    registers,
  });
  const storeDuration = new Histogram({
    name: 'kvbackend_store_command_duration_seconds',
    help: 'Round trip of a store command as seen by the backend, in seconds.',
    labelNames: ['command'] as const,
    buckets: BUCKETS,
    registers,
  });
  const storeUp = new Gauge({
    name: 'kvbackend_store_up',
    help: '1 when the last USAGE probe of the store succeeded, else 0.',
    registers,
  });
  const storeUsage = new Gauge({
    name: 'kvbackend_store_usage_bytes',
    help: 'Bytes held by the store, from the last successful USAGE probe.',
    registers,
  });
  const storeErrors = new Counter({
    name: 'kvbackend_store_errors_total',
    help: 'Failed store commands by kind: timeout, unavailable or protocol.',
    labelNames: ['kind'] as const,
    registers,
  });
  new Gauge({
    name: 'kvbackend_store_pool_connections',
    help: 'Connections of the store pool, by state.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      if (!poolStates) return;
      const counts = poolStates();
      for (const state of POOL_STATES) this.set({ state }, counts[state]);
    },
  });

  // Series that alerts and dashboards read exist from the start, at zero.
  storeUp.set(0);
  storeUsage.set(0);
  for (const kind of ['timeout', 'unavailable', 'protocol']) storeErrors.inc({ kind }, 0);

  const requestLabels = new Map<string, Map<number, { method: string; status: string }>>();
  const methodLabels = new Map<string, { method: string }>();
  for (const method of [...HTTP_METHODS, 'OTHER']) {
    requestLabels.set(method, new Map());
    methodLabels.set(method, { method });
  }
  const commandLabels = new Map<string, { command: string }>();
  const commandResultLabels = new Map<string, { command: string; result: string }>();
  const kindLabels = new Map<string, { kind: string }>();

  return {
    recordRequest(method, status, seconds) {
      const m = methodLabel(method);
      const byStatus = requestLabels.get(m)!;
      let labels = byStatus.get(status);
      if (!labels) {
        labels = { method: m, status: String(status) };
        byStatus.set(status, labels);
      }
      httpRequests.inc(labels);
      httpDuration.observe(methodLabels.get(m)!, seconds);
    },

    observeCommand(command, result, seconds, error) {
      const c = commandLabel(command);
      const id = `${c} ${result}`;
      let labels = commandResultLabels.get(id);
      if (!labels) {
        labels = { command: c, result };
        commandResultLabels.set(id, labels);
        commandLabels.set(c, { command: c });
      }
      storeCommands.inc(labels);
      storeDuration.observe(commandLabels.get(c)!, seconds);
      // ERROR replies are the store's answer, not a transport failure: counted by result only.
      if (error !== undefined && !(error instanceof StoreReplyError)) {
        const kind = errorKind(error);
        let kl = kindLabels.get(kind);
        if (!kl) kindLabels.set(kind, (kl = { kind }));
        storeErrors.inc(kl);
      }
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
