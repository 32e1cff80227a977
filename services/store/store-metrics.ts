import type { Registry } from 'prom-client';
import { Counter, Gauge } from '../shared/prometheus.ts';
import { pushHistogramSamples, ScrapeTimeMetric, type MetricSample } from '../shared/scrape-time-metric.ts';
import { COMMAND_NAMES, PARSE_ERROR_REASONS } from '../protocol/command-parser.ts';
import type { EngineStats } from './engine/engine-api.ts';

/**
 * The store's metrics (SPEC §4).
 *
 * Recording happens per command, hundreds of thousands of times a second, so the hot
 * path only adds to plain typed arrays indexed by command, result and bucket (prom-client's
 * labelled inc()/observe() hash a label object on every call). The totals are handed to
 * prom-client at scrape time: scalar series through collect(), the labelled counters and
 * the histogram through small metric objects that render prom-client's `get()` format.
 */

export const RESULT_OK = 0;
export const RESULT_NOT_FOUND = 1;
export const RESULT_ERROR = 2;
const RESULTS = ['ok', 'not_found', 'error'] as const;

/** Protocol error reasons: the parser's, in its code order, then the framer's, then a command sent before AUTH (SPEC §8). */
export const PROTOCOL_ERROR_REASONS = [...PARSE_ERROR_REASONS.slice(1), 'line_too_long', 'authentication_required'] as const;
/** Index into PROTOCOL_ERROR_REASONS of a parser error code (codes start at 1). */
export const reasonIndexOfParseError = (code: number): number => code - 1;
export const LINE_TOO_LONG = PROTOCOL_ERROR_REASONS.indexOf('line_too_long');
export const AUTHENTICATION_REQUIRED = PROTOCOL_ERROR_REASONS.indexOf('authentication_required');

/** Why a connection stopped running commands before its input was used up (it continues later). */
export const YIELD_REASONS = ['reply_bound', 'command_budget', 'time_slice', 'turn_budget'] as const;
/** Its unsent replies reached the bound: it continues when the client has taken them. */
export const REPLY_BOUND = 0;
/** It ran its commands for this event-loop turn: it continues in a later turn. */
export const COMMAND_BUDGET = 1;
/** It ran for its time in this turn (commands slower than usual: code not yet optimised, a page fault): it continues in a later turn. */
export const TIME_SLICE = 2;
/** It waited in line past a turn end whose time for pipelined work was spent before its place came: it runs at a later one (turn-scheduler.ts). */
export const TURN_BUDGET = 3;

/** Upper bounds in seconds: 25 µs doubling to about 1.6 s (sub-millisecond resolution where commands live). */
export const DURATION_BUCKETS: readonly number[] = Array.from({ length: 17 }, (_, k) => Number((0.000025 * 2 ** k).toPrecision(6)));

const COMMANDS = COMMAND_NAMES.length;
const SLOTS = DURATION_BUCKETS.length + 1; // the last slot is +Inf

export interface StoreMetricsOptions {
  readonly registry: Registry;
  readonly engine: EngineStats;
  /** Open client connections right now. */
  readonly connections: () => number;
  /** The MAX_CONNECTIONS limit, exported so alerts and dashboards can compare against it. */
  readonly maxConnections: number;
  /** Where the record arena's pages come from (page-source.ts); omitted: the serving thread, from the start. */
  readonly arenaPages?: { readonly threaded: boolean; readonly fellBack: boolean };
  /** The arena's pages are mapped one by one by the native add-on (page-source.ts, MappedPageSource). */
  readonly arenaPagesMapped?: boolean;
  /** Trims of malloc's heaps made so far (runtime/idle-malloc-trim.ts); omitted: none are made. */
  readonly mallocTrims?: () => number;
  /** Client sockets are read and written through the native add-on (native-io.ts). */
  readonly nativeIo?: boolean;
}

/** Counts kept by the server; plain fields and arrays so recording is a few adds. */
export class StoreMetrics {
  /** [command * 3 + result] */
  readonly commands = new Float64Array(COMMANDS * 3);
  /** [command * SLOTS + bucket], not cumulative. */
  readonly durationCounts = new Float64Array(COMMANDS * SLOTS);
  readonly durationSums = new Float64Array(COMMANDS);
  /** [index into PROTOCOL_ERROR_REASONS] */
  readonly protocolErrors = new Float64Array(PROTOCOL_ERROR_REASONS.length);
  /** [index into YIELD_REASONS] */
  readonly connectionYields = new Float64Array(YIELD_REASONS.length);
  connectionsTotal = 0;
  rejectedConnections = 0;
  receivedBytes = 0;
  sentBytes = 0;
  /** Connections closed because the client took none of its replies for OUTPUT_STALL_TIMEOUT_MS. */
  outputLimitDisconnects = 0;
  /** AUTH attempts with a wrong password (SPEC §8). */
  authFailures = 0;
  /** Reloads of STORE_PASSWORD_FILE that failed (the password in use stayed). */
  passwordReloadFailures = 0;

  /** One command answered: its code, result and how long it took. */
  record(command: number, result: number, seconds: number): void {
    this.commands[command * 3 + result]!++;
    let b = 0;
    while (b < SLOTS - 1 && seconds > DURATION_BUCKETS[b]!) b++;
    this.durationCounts[command * SLOTS + b]!++;
    this.durationSums[command]! += seconds;
  }

  reset(): void {
    this.commands.fill(0);
    this.durationCounts.fill(0);
    this.durationSums.fill(0);
    this.protocolErrors.fill(0);
    this.connectionYields.fill(0);
    this.connectionsTotal = this.rejectedConnections = this.receivedBytes = this.sentBytes = this.outputLimitDisconnects = this.authFailures = this.passwordReloadFailures = 0;
  }
}

/** Registers every store metric on `registry` and returns the counts the server feeds. */
export function createStoreMetrics({ registry, engine, connections, maxConnections, arenaPages, arenaPagesMapped = false, mallocTrims = () => 0, nativeIo = false }: StoreMetricsOptions): StoreMetrics {
  const m = new StoreMetrics();
  const registers = [registry];
  const reset = () => m.reset();

  new ScrapeTimeMetric({
    name: 'kvstore_commands_total',
    help: 'Commands answered, by command (UNKNOWN for unknown names) and result (ok, not_found, error).',
    type: 'counter',
    registry,
    reset,
    samples: () => {
      const values: MetricSample[] = [];
      for (let c = 0; c < COMMANDS; c++) {
        for (let r = 0; r < 3; r++) values.push({ value: m.commands[c * 3 + r]!, labels: { command: COMMAND_NAMES[c]!, result: RESULTS[r]! } });
      }
      return values;
    },
  });

  new ScrapeTimeMetric({
    name: 'kvstore_command_duration_seconds',
    help: 'Time to execute a command in the store, from parsed line to reply, in seconds.',
    type: 'histogram',
    registry,
    reset,
    samples: () => {
      const values: MetricSample[] = [];
      for (let c = 0; c < COMMANDS; c++) {
        const at = c * SLOTS;
        pushHistogramSamples(values, 'kvstore_command_duration_seconds', { command: COMMAND_NAMES[c]! }, DURATION_BUCKETS, (b) => m.durationCounts[at + b]!, m.durationSums[c]!);
      }
      return values;
    },
  });

  new ScrapeTimeMetric({
    name: 'kvstore_protocol_errors_total',
    help: 'Malformed or refused lines, by reason.',
    type: 'counter',
    registry,
    reset,
    samples: () => PROTOCOL_ERROR_REASONS.map((reason, i) => ({ value: m.protocolErrors[i]!, labels: { reason } })),
  });

  new ScrapeTimeMetric({
    name: 'kvstore_connection_yields_total',
    help: 'Times a connection stopped running its pipelined commands to let others run: its unsent replies reached the bound (reply_bound), it used its commands for the turn (command_budget), its time for the turn (time_slice), or it waited in line past a turn end that spent its time for pipelined work before its place came (turn_budget).',
    type: 'counter',
    registry,
    reset,
    samples: () => YIELD_REASONS.map((reason, i) => ({ value: m.connectionYields[i]!, labels: { reason } })),
  });

  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({ name, help, registers, collect() { this.set(read()); } });
  const counter = (name: string, help: string, read: () => number) =>
    new Counter({ name, help, registers, collect() { this.reset(); this.inc(read()); } });

  gauge('kvstore_usage_bytes', 'Bytes held: key bytes plus value bytes over all entries (the USAGE reply).', () => engine.usageBytes);
  gauge('kvstore_max_memory_bytes', 'The MAX_MEMORY_BYTES cap on usage.', () => engine.maxMemoryBytes);
  gauge('kvstore_keys', 'Keys held.', () => engine.keyCount);
  gauge('kvstore_expiry_backlog_keys', 'Keys past their expiry that the active sweep has not removed yet (they still count in USAGE); 0 when it keeps up.', () => engine.expiryBacklog);
  gauge('kvstore_connections', 'Open client connections.', connections);
  gauge('kvstore_max_connections', 'The MAX_CONNECTIONS limit on open client connections.', () => maxConnections);
  gauge('kvstore_memory_arena_bytes', 'Bytes of the pages (and their owner arrays) holding the records: usage plus size-class rounding and partly filled pages.', () => engine.arenaBytes);
  gauge('kvstore_memory_footprint_bytes', 'Bytes the data holds in memory: the arena plus the per-key slot, expiry and bucket arrays.', () => engine.footprintBytes);
  gauge('kvstore_memory_footprint_limit_bytes', 'Limit on kvstore_memory_footprint_bytes: 1.25 times MAX_MEMORY_BYTES plus the arena fixed slack.', () => engine.footprintLimitBytes);
  counter(
    'kvstore_memory_malloc_trims_total',
    'Times malloc\'s free memory was handed back to the OS after the store stood idle for a second (malloc_trim on a thread of libuv\'s pool); 0 without the C add-on or glibc.',
    mallocTrims,
  );
  gauge(
    'kvstore_memory_arena_pages_mapped',
    'Whether the record arena\'s pages are each a mapping of their own made by the store\'s C add-on (1), so that freed records go back to the OS at once; 0 without the add-on (then kvstore_memory_arena_pages_threaded says where they come from).',
    () => (arenaPagesMapped ? 1 : 0),
  );
  gauge(
    'kvstore_memory_arena_pages_threaded',
    'Whether the record arena\'s pages come from a thread of their own (1), whose malloc maps each one, so that freed records go back to the OS; used only without the C add-on (kvstore_memory_arena_pages_mapped). 0 when the add-on maps them, or when they come from the serving thread (no glibc, or the thread was given up: kvstore_memory_arena_page_thread_fallbacks_total).',
    () => (arenaPages?.threaded ? 1 : 0),
  );
  counter(
    'kvstore_memory_arena_page_thread_fallbacks_total',
    'Times the page thread was given up while in use (it failed, exited, or took over 1 s for a page): 0 or 1, as pages come from the serving thread from then on.',
    () => (arenaPages?.fellBack ? 1 : 0),
  );
  gauge(
    'kvstore_native_io',
    'Whether client sockets are read and written by the store\'s C add-on (1; STORE_NATIVE_IO, README) or through Node\'s own socket I/O (0: not built, not Linux, or switched off).',
    () => (nativeIo ? 1 : 0),
  );
  counter('kvstore_evictions_total', 'Keys evicted to make room (EVICTION_POLICY=lru).', () => engine.evictions);
  counter('kvstore_memory_footprint_evictions_total', 'Of kvstore_evictions_total, keys evicted because the memory footprint limit was reached before the usage cap.', () => engine.footprintEvictions);
  counter('kvstore_expired_keys_total', 'Keys removed because their time to live ran out.', () => engine.expired);
  counter('kvstore_keyspace_hits_total', 'Key lookups that found the key.', () => engine.hits);
  counter('kvstore_keyspace_misses_total', 'Key lookups that did not find the key.', () => engine.misses);
  counter('kvstore_connections_total', 'Client connections accepted.', () => m.connectionsTotal);
  counter('kvstore_rejected_connections_total', 'Client connections refused because MAX_CONNECTIONS was reached.', () => m.rejectedConnections);
  counter('kvstore_network_received_bytes_total', 'Bytes read from clients.', () => m.receivedBytes);
  counter('kvstore_network_sent_bytes_total', 'Bytes of replies written to clients.', () => m.sentBytes);
  counter('kvstore_auth_failures_total', 'AUTH attempts with a wrong password (STORE_PASSWORD); the third on a connection closes it.', () => m.authFailures);
  counter(
    'kvstore_password_reload_failures_total',
    'Reads of STORE_PASSWORD_FILE (on SIGHUP or a change on disk) that failed: the password in use stayed.',
    () => m.passwordReloadFailures,
  );
  counter(
    'kvstore_output_limit_disconnects_total',
    'Client connections closed because the client took none of its queued replies for OUTPUT_STALL_TIMEOUT_MS.',
    () => m.outputLimitDisconnects,
  );

  return m;
}

/**
 * kvstore_start_duration_seconds, registered once the store serves: the seconds from the
 * process's start to its ready line (the ready line's `startup` says where they went).
 */
export function registerStartDuration(registry: Registry, seconds: number): void {
  new Gauge({
    name: 'kvstore_start_duration_seconds',
    help: "Seconds from the process's start until the store served: Node's start-up and the store's modules, the code warm-up, the snapshot load and the rest (the ready line's startup field splits them).",
    registers: [registry],
  }).set(seconds);
}
