// The kvstack dashboard: store, backend and their processes on one page. Generated to
// kvstack.json by `npm run dashboards`; Grafana loads the JSON (grafana/provisioning).
import { ALERT_THRESHOLDS, SLO_BURN_RATES, SLO_ERROR_BUDGET, STORE_RSS_BOUND } from '../alert-thresholds.ts';
import { dashboard, gauge, query, row, stat, timeseries, variable, type Color, type ThresholdStep } from '../dashboard-builder.ts';

/** `metric{job=~"$job",instance=~"$instance",<extra>}`: every series follows the variables. */
const sel = (metric: string, extra = ''): string => `${metric}{job=~"$job",instance=~"$instance"${extra ? `,${extra}` : ''}}`;
const rate = (metric: string, extra = ''): string => `rate(${sel(metric, extra)}[$__rate_interval])`;
/**
 * The current rate as a count per `seconds`, to set beside an alert that counts over a
 * fixed window: the dashboard keeps to $__rate_interval, which follows the scrape
 * interval and the zoom, where a fixed window would show nothing or smooth too much.
 */
const perWindow = (seconds: number, metric: string, extra = ''): string => `${rate(metric, extra)} * ${seconds}`;
const quantile = (q: number, histogram: string, by: string): string =>
  `histogram_quantile(${q}, sum by (le, ${by}) (${rate(`${histogram}_bucket`)}))`;

/** The p50 and p99 of a latency histogram, one series each per instance. */
const p50p99 = (histogram: string) => [0.5, 0.99].map((q) => query(quantile(q, histogram, 'instance'), `p${q * 100} {{instance}}`));
const steps = (values: readonly number[], colors: readonly Color[]): ThresholdStep[] => values.map((value, i) => ({ value, color: colors[i]! }));
const T = ALERT_THRESHOLDS;

/** 5xx over all responses; 0 rather than no data while there are requests but no errors. */
const errorRatio = (by: string): string => {
  const all = `sum by (${by}) (${rate('kvbackend_http_requests_total')})`;
  return `(sum by (${by}) (${rate('kvbackend_http_requests_total', 'status=~"5.."')}) or ${all} * 0) / ${all}`;
};
const hitRatio = (by: string): string => {
  const hits = `sum by (${by}) (${rate('kvstore_keyspace_hits_total')})`;
  return `${hits} / (${hits} + sum by (${by}) (${rate('kvstore_keyspace_misses_total')}))`;
};
const memoryRatio = `${sel('kvstore_usage_bytes')} / ${sel('kvstore_max_memory_bytes')}`;
const connectionRatio = `${sel('kvstore_connections')} / ${sel('kvstore_max_connections')}`;

const reachable = [
  { value: 0, text: 'unreachable', color: 'red' },
  { value: 1, text: 'reachable', color: 'green' },
] as const;

export default dashboard({
  uid: 'kvstack',
  title: 'kvstack',
  description: 'kvstack store and HTTP backend: traffic, latency, memory, connections, errors, SLO burn and process health. Dashed lines are alert thresholds (alert-rules.yml).',
  tags: ['kvstack'],
  variables: [
    variable('job', 'job', 'label_values({__name__=~"kvstore_keys|kvbackend_store_up"}, job)'),
    variable('instance', 'instance', 'label_values({__name__=~"kvstore_keys|kvbackend_store_up",job=~"$job"}, instance)'),
  ],
  rows: [
    row('Overview', [
      stat({
        title: 'Store reachable',
        description: 'Whether every backend reaches every store shard (kvbackend_store_up, refreshed every 5 s). A shard\'s keys get 503 while it does not.',
        unit: 'none',
        queries: [query(`min(${sel('kvbackend_store_up')})`, 'store')],
        mappings: reachable,
        thresholds: { base: 'red', steps: [{ value: 1, color: 'green' }] },
      }),
      stat({
        title: 'HTTP requests/s',
        description: 'Requests answered by the backends, all statuses.',
        unit: 'reqps',
        queries: [query(`sum(${rate('kvbackend_http_requests_total')})`, 'requests/s')],
        thresholds: { base: 'blue', steps: [] },
      }),
      stat({
        title: '5xx ratio',
        description: `Share of backend responses with a 5xx. Orange above the error budget of the ${100 - SLO_ERROR_BUDGET * 100}% availability SLO, red at the KvBackend5xxRatioHigh alert.`,
        unit: 'percentunit',
        decimals: 2,
        queries: [query(errorRatio('job'), '5xx')],
        thresholds: { steps: [{ value: SLO_ERROR_BUDGET, color: 'orange' }, ...steps(T.KvBackend5xxRatioHigh, ['red'])] },
      }),
      stat({
        title: 'Hit ratio',
        description: 'Lookups that found their key. Red below the KvStoreLowHitRate threshold.',
        unit: 'percentunit',
        decimals: 1,
        queries: [query(hitRatio('job'), 'hit ratio')],
        thresholds: { base: 'red', steps: steps(T.KvStoreLowHitRate, ['green']) },
      }),
      gauge({
        title: 'Memory used of the cap',
        description: 'USAGE over MAX_MEMORY_BYTES, the fullest store. Red at the KvStoreMemoryHigh alert.',
        unit: 'percentunit',
        min: 0,
        max: 1,
        queries: [query(`max(${memoryRatio})`, 'used')],
        thresholds: { steps: steps(T.KvStoreMemoryHigh, ['red']) },
      }),
      gauge({
        title: 'Connections of the limit',
        description: 'Open client connections over MAX_CONNECTIONS, the busiest store. Orange and red at the KvStoreConnectionsHigh warning and critical alerts.',
        unit: 'percentunit',
        min: 0,
        max: 1,
        queries: [query(`max(${connectionRatio})`, 'connections')],
        thresholds: { steps: steps(T.KvStoreConnectionsHigh, ['orange', 'red']) },
      }),
    ]),

    row('Store', [
      timeseries({
        title: 'Commands/s by command and result',
        description: 'Commands answered by the store (kvstore_commands_total); series with no traffic are hidden.',
        unit: 'ops',
        width: 8,
        queries: [query(`sum by (command, result) (${rate('kvstore_commands_total')}) > 0`, '{{command}} {{result}}')],
      }),
      timeseries({
        title: 'Hit ratio',
        description: 'Lookups that found their key (keyspace hits over hits + misses). The dashed line is the KvStoreLowHitRate threshold.',
        unit: 'percentunit',
        width: 8,
        min: 0,
        max: 1,
        queries: [query(hitRatio('instance'), '{{instance}}')],
        thresholds: { base: 'red', steps: steps(T.KvStoreLowHitRate, ['green']) },
      }),
      timeseries({
        title: 'Command latency p50 / p99',
        description: 'Time the store takes from a parsed line to its reply (kvstore_command_duration_seconds), all commands.',
        unit: 's',
        width: 8,
        queries: p50p99('kvstore_command_duration_seconds'),
      }),
      timeseries({
        title: 'Memory used of the cap',
        description: 'USAGE (key + value bytes) over MAX_MEMORY_BYTES. The dashed line is the KvStoreMemoryHigh threshold; with EVICTION_POLICY=lru a full cache evicts.',
        unit: 'percentunit',
        width: 8,
        min: 0,
        max: 1,
        queries: [query(memoryRatio, '{{instance}}')],
        thresholds: { steps: steps(T.KvStoreMemoryHigh, ['red']) },
      }),
      timeseries({
        title: 'Usage against the cap',
        description: 'Bytes held (kvstore_usage_bytes) and the MAX_MEMORY_BYTES cap.',
        unit: 'bytes',
        width: 8,
        min: 0,
        queries: [query(sel('kvstore_usage_bytes'), 'used {{instance}}'), query(sel('kvstore_max_memory_bytes'), 'cap {{instance}}')],
      }),
      timeseries({
        title: 'Memory against its bounds',
        description:
          'The data\'s footprint (kvstore_memory_footprint_bytes: records, their rounding and the per-key arrays) against its limit, and the resident set against the bound containers are sized from, 1.5 × MAX_MEMORY_BYTES + 200 MiB (KvStoreRssAboveBound).',
        unit: 'bytes',
        width: 8,
        min: 0,
        queries: [
          query(sel('kvstore_memory_footprint_bytes'), 'footprint {{instance}}'),
          query(sel('kvstore_memory_footprint_limit_bytes'), 'footprint limit {{instance}}'),
          query(sel('process_resident_memory_bytes', 'job=~"kvstore.*"'), 'resident {{instance}}'),
          query(`${STORE_RSS_BOUND.capFactor} * ${sel('kvstore_max_memory_bytes')} + ${STORE_RSS_BOUND.baseBytes}`, 'resident bound {{instance}}'),
        ],
      }),
      timeseries({
        title: 'Expired keys waiting for the sweep',
        description: 'Keys past their expiry not yet removed (kvstore_expiry_backlog_keys); KvStoreExpiryBacklog fires when it stays above 10,000 for 5 minutes.',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [query(sel('kvstore_expiry_backlog_keys'), '{{instance}}')],
      }),
      timeseries({
        title: 'Where record pages come from',
        description:
          'Whether the record arena\'s pages are each mapped on its own by the C add-on (kvstore_memory_arena_pages_mapped: 1), or, without the add-on, come from a thread of their own (kvstore_memory_arena_pages_threaded: 1); either way freed records go back to the OS. Given up: that thread was (kvstore_memory_arena_page_thread_fallbacks_total: KvStorePageThreadGivenUp fires at 1). All 0: a platform without the add-on or glibc, pages from the serving thread from the start.',
        unit: 'none',
        width: 8,
        min: 0,
        queries: [
          query(sel('kvstore_memory_arena_pages_mapped'), 'mapped {{instance}}'),
          query(sel('kvstore_memory_arena_pages_threaded'), 'threaded {{instance}}'),
          query(sel('kvstore_memory_arena_page_thread_fallbacks_total'), 'given up {{instance}}'),
        ],
      }),
      timeseries({
        title: 'Client sockets through the C add-on',
        description:
          'Whether the store reads and writes its client sockets with its C add-on (kvstore_native_io: 1) or through Node\'s own socket I/O (0: STORE_NATIVE_IO=off, or the add-on was not built: no C compiler where npm ci or the image build ran). Node\'s path costs more CPU per command at low pipeline depths; nothing else differs.',
        unit: 'none',
        width: 8,
        min: 0,
        queries: [query(sel('kvstore_native_io'), '{{instance}}')],
      }),
      timeseries({
        title: 'Keys',
        description: 'Keys held (kvstore_keys).',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [query(sel('kvstore_keys'), '{{instance}}')],
      }),
      timeseries({
        title: 'Evictions and expirations',
        description: 'Keys evicted to make room (LRU) and keys whose TTL ran out, per second. The dashed line is the KvStoreHighEvictionRate threshold.',
        unit: 'cps',
        width: 8,
        min: 0,
        queries: [query(rate('kvstore_evictions_total'), 'evicted {{instance}}'), query(rate('kvstore_expired_keys_total'), 'expired {{instance}}')],
        thresholds: { steps: steps(T.KvStoreHighEvictionRate, ['orange']) },
      }),
      timeseries({
        title: 'Connections of the limit',
        description: 'Open client connections over MAX_CONNECTIONS. Dashed lines: the KvStoreConnectionsHigh warning and critical thresholds.',
        unit: 'percentunit',
        width: 8,
        min: 0,
        max: 1,
        queries: [query(connectionRatio, '{{instance}}')],
        thresholds: { steps: steps(T.KvStoreConnectionsHigh, ['orange', 'red']) },
      }),
      timeseries({
        title: 'Open connections and the limit',
        description: 'Open client connections (kvstore_connections) and MAX_CONNECTIONS (kvstore_max_connections).',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [query(sel('kvstore_connections'), 'open {{instance}}'), query(sel('kvstore_max_connections'), 'limit {{instance}}')],
      }),
      timeseries({
        title: 'Connections accepted and rejected/s',
        description: 'New client connections per second, and those turned away at MAX_CONNECTIONS (KvStoreRejectedConnections fires on any).',
        unit: 'cps',
        width: 8,
        min: 0,
        queries: [
          query(rate('kvstore_connections_total'), 'accepted {{instance}}'),
          query(rate('kvstore_rejected_connections_total'), 'rejected {{instance}}'),
        ],
      }),
      timeseries({
        title: 'Wrong passwords per 5 minutes',
        description:
          'At the current rate, per 5 minutes: AUTH attempts with a wrong password (kvstore_auth_failures_total; KvStoreAuthFailures fires when more than 20, the line, arrive within 5 minutes), commands refused because their connection had not sent the password (kvstore_protocol_errors_total{reason="authentication_required"}): a client without a password, and failed reads of STORE_PASSWORD_FILE (KvStorePasswordReloadFailing). All stay at 0 on a store without STORE_PASSWORD.',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [
          query(perWindow(300, 'kvstore_auth_failures_total'), 'wrong password {{instance}}'),
          query(perWindow(300, 'kvstore_protocol_errors_total', 'reason="authentication_required"'), 'refused before AUTH {{instance}}'),
          query(perWindow(300, 'kvstore_password_reload_failures_total'), 'failed password reloads {{instance}}'),
        ],
        thresholds: { steps: steps(T.KvStoreAuthFailures, ['red']) },
      }),
      timeseries({
        title: 'Store TLS: certificate days left, failures',
        description:
          'Days until the certificate each store presents on its port expires (kvstore_tls_certificate_expiry_timestamp_seconds; KvStoreTlsCertificateExpiring fires below the line; it jumps up when a renewed certificate is reloaded), and per 5 minutes at the current rate: failed reloads of STORE_TLS_CERT_FILE, STORE_TLS_KEY_FILE and STORE_TLS_CA_FILE (KvStoreTlsReloadFailing) and failed handshakes by reason (kvstore_tls_handshake_failures_total: plaintext clients, refused client certificates, time-outs). A store without TLS has none of these series: no days-left line, the counts at 0.',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [
          // Without TLS there is no series: NaN draws nothing (0 would read as expired), and the query still answers.
          query(`(${sel('kvstore_tls_certificate_expiry_timestamp_seconds')} - time()) / 86400 or on() vector(NaN)`, 'days left {{instance}}'),
          query(`${perWindow(300, 'kvstore_tls_reload_failures_total')} or on() vector(0)`, 'failed reloads {{instance}}'),
          query(`sum by (reason) (${perWindow(300, 'kvstore_tls_handshake_failures_total')}) or on() vector(0)`, 'failed handshakes: {{reason}}'),
        ],
        thresholds: { steps: steps(T.KvStoreTlsCertificateExpiring, ['red']) },
      }),
      timeseries({
        title: 'Clients held back and cut off/s',
        description:
          'Connections that stopped running their pipelined commands to let others run (kvstore_connection_yields_total: reply_bound at 64 KiB of unsent replies, command_budget after 256 commands in a turn, time_slice after 0.5 ms of a turn: commands running slower than usual, turn_budget when a connection’s pipelined commands waited in line past a turn end because the 1 ms a turn gives pipelined work was spent: many clients pipelining at once), and connections closed because the client took none of its replies for OUTPUT_STALL_TIMEOUT_MS (KvStoreOutputLimitDisconnects).',
        unit: 'cps',
        width: 8,
        min: 0,
        queries: [
          query(`sum by (reason) (${rate('kvstore_connection_yields_total')})`, 'held back: {{reason}}'),
          query(`sum(${rate('kvstore_output_limit_disconnects_total')})`, 'cut off'),
        ],
      }),
      timeseries({
        title: 'Protocol errors/s by reason',
        description: 'Malformed or refused lines (kvstore_protocol_errors_total): invalid keys, unknown commands, over-long lines, …',
        unit: 'cps',
        width: 8,
        min: 0,
        queries: [query(`sum by (reason) (${rate('kvstore_protocol_errors_total')})`, '{{reason}}')],
      }),
      timeseries({
        title: 'Network traffic',
        description: 'Bytes read from and written to store clients, per second.',
        unit: 'Bps',
        width: 8,
        min: 0,
        queries: [
          query(rate('kvstore_network_received_bytes_total'), 'received {{instance}}'),
          query(rate('kvstore_network_sent_bytes_total'), 'sent {{instance}}'),
        ],
      }),
    ]),

    row('Snapshots', [
      timeseries({
        title: 'Age of the newest snapshot',
        description:
          'Seconds since the last snapshot was written (since the process started, while none has been). With periodic snapshots, KvStoreSnapshotStale fires past three intervals.',
        unit: 's',
        width: 6,
        min: 0,
        queries: [
          query(`time() - (${sel('kvstore_snapshot_last_success_timestamp_seconds')} > 0 or ${sel('process_start_time_seconds', 'job=~"kvstore.*"')})`, 'age {{instance}}'),
          query(sel('kvstore_snapshot_interval_seconds'), 'interval {{instance}} (0: at shutdown only)'),
        ],
      }),
      timeseries({
        title: 'Snapshot duration p50 / p99',
        description: 'Time to write a snapshot, from its point in time to the rename (kvstore_snapshot_duration_seconds).',
        unit: 's',
        width: 6,
        min: 0,
        queries: p50p99('kvstore_snapshot_duration_seconds'),
      }),
      timeseries({
        title: 'Snapshot size',
        description: 'Size of the last snapshot written (kvstore_snapshot_size_bytes).',
        unit: 'bytes',
        width: 4,
        min: 0,
        queries: [query(sel('kvstore_snapshot_size_bytes'), '{{instance}}')],
      }),
      timeseries({
        title: 'Keys loaded at start-up',
        description: 'Keys loaded from the snapshot when the store started (kvstore_snapshot_loaded_keys).',
        unit: 'short',
        width: 4,
        min: 0,
        queries: [query(sel('kvstore_snapshot_loaded_keys'), '{{instance}}')],
      }),
      timeseries({
        title: 'Snapshot failures/s',
        description: 'Saves that failed (disk full, permissions) and files that could not be loaded (kvstore_snapshot_failures_total); KvStoreSnapshotFailing fires on any.',
        unit: 'cps',
        width: 4,
        min: 0,
        queries: [query(rate('kvstore_snapshot_failures_total'), '{{instance}}')],
      }),
    ]),

    row('Backend', [
      timeseries({
        title: 'HTTP requests/s by status',
        description: 'Responses of the backends by status code (kvbackend_http_requests_total).',
        unit: 'reqps',
        width: 8,
        min: 0,
        queries: [query(`sum by (status) (${rate('kvbackend_http_requests_total')})`, '{{status}}')],
      }),
      timeseries({
        title: '5xx ratio',
        description: `Share of responses with a 5xx. Dashed lines: the error budget of the ${100 - SLO_ERROR_BUDGET * 100}% SLO and the KvBackend5xxRatioHigh threshold.`,
        unit: 'percentunit',
        width: 8,
        min: 0,
        queries: [query(errorRatio('instance'), '{{instance}}')],
        thresholds: { steps: [{ value: SLO_ERROR_BUDGET, color: 'orange' }, ...steps(T.KvBackend5xxRatioHigh, ['red'])] },
      }),
      timeseries({
        title: 'Error budget burn rate',
        description:
          'How many times faster than the 99.9% SLO allows the error budget is being spent, over four windows (recording rules job:kvbackend_http_errors:ratio_rate*). Pages at 14.4x (1h and 5m) and 6x (6h and 30m); tickets at 3x (1d and 2h) and 1x (3d and 6h).',
        unit: 'suffix:x',
        width: 8,
        min: 0,
        queries: (['5m', '1h', '6h', '3d'] as const).map((w) =>
          query(`job:kvbackend_http_errors:ratio_rate${w}{job=~"$job"} / ${SLO_ERROR_BUDGET}`, `${w} window`),
        ),
        thresholds: { steps: steps(SLO_BURN_RATES, ['yellow', 'orange', 'red', 'purple']) },
      }),
      timeseries({
        title: 'HTTP latency p50 / p99',
        description: 'Time from request arrival to the end of the response (kvbackend_http_request_duration_seconds). The dashed line is the KvBackendLatencyP99High threshold.',
        unit: 's',
        width: 8,
        queries: p50p99('kvbackend_http_request_duration_seconds'),
        thresholds: { steps: steps(T.KvBackendLatencyP99High, ['red']) },
      }),
      timeseries({
        title: 'Store round trip from the backend p50 / p99',
        description: 'Store commands as the backend sees them (kvbackend_store_command_duration_seconds): network and pool queueing on top of the store\'s own time.',
        unit: 's',
        width: 8,
        queries: p50p99('kvbackend_store_command_duration_seconds'),
      }),
      timeseries({
        title: 'HTTP requests/s by method',
        description: 'Requests by HTTP method.',
        unit: 'reqps',
        width: 8,
        min: 0,
        queries: [query(`sum by (method) (${rate('kvbackend_http_requests_total')})`, '{{method}}')],
      }),
      timeseries({
        title: 'Store reachable from the backend',
        description: 'The backend\'s periodic USAGE probe of its store (kvbackend_store_up). KvBackendStoreUnreachable fires after a minute at 0.',
        unit: 'none',
        width: 8,
        min: 0,
        max: 1,
        mappings: reachable,
        queries: [query(sel('kvbackend_store_up'), '{{instance}}')],
      }),
      timeseries({
        title: 'Store commands/s from the backend',
        description: 'Store commands sent by the backends, by command and result (kvbackend_store_commands_total).',
        unit: 'ops',
        width: 8,
        min: 0,
        queries: [query(`sum by (command, result) (${rate('kvbackend_store_commands_total')})`, '{{command}} {{result}}')],
      }),
      timeseries({
        title: 'Store errors/s by kind',
        description: 'Failed store commands: timeout (504), unavailable (503), protocol (502); and max_connections, pool connections a full store refused (KvBackendStoreConnectionsRefused).',
        unit: 'ops',
        width: 8,
        min: 0,
        queries: [query(`sum by (kind) (${rate('kvbackend_store_errors_total')})`, '{{kind}}')],
      }),
      timeseries({
        title: 'Store connection pool',
        description: 'Connections of the backends\' store pools by state (kvbackend_store_pool_connections).',
        unit: 'short',
        width: 8,
        min: 0,
        stack: true,
        queries: [query(`sum by (state) (${sel('kvbackend_store_pool_connections')})`, '{{state}}')],
      }),
      timeseries({
        title: 'Store usage seen by the backend',
        description: 'USAGE of the store as the backend\'s probe last read it (kvbackend_store_usage_bytes).',
        unit: 'bytes',
        width: 8,
        min: 0,
        queries: [query(sel('kvbackend_store_usage_bytes'), '{{instance}}')],
      }),
      timeseries({
        title: 'Request bodies held and their limit',
        description: 'Request-body bytes the backends hold for bodies being read (a declared length counts whole), against BODY_BUFFER_BYTES; past it, writes get 503 at once.',
        unit: 'bytes',
        width: 8,
        min: 0,
        queries: [
          query(sel('kvbackend_http_body_buffered_bytes'), 'held {{instance}}'),
          query(sel('kvbackend_http_body_buffer_limit_bytes'), 'limit {{instance}}'),
        ],
      }),
      timeseries({
        title: 'Request bodies refused/s by reason',
        description: 'too_large: over MAX_VALUE_BYTES (413); timeout: not received within BODY_TIMEOUT_MS (408); buffer_full: BODY_BUFFER_BYTES held (503, KvBackendBodyBufferFull).',
        unit: 'ops',
        width: 8,
        min: 0,
        queries: [query(`sum by (reason) (${rate('kvbackend_http_body_refusals_total')})`, '{{reason}}')],
      }),
      timeseries({
        title: 'Requests refused for their token per 5 minutes',
        description:
          'At the current rate, per 5 minutes: requests answered 401 or 403 because of their Authorization header, by backend (kvbackend_auth_failures_total; KvBackendAuthFailures fires when more than 100, the line, arrive within 5 minutes) and by reason: missing (no Bearer token), unknown (a token not in BACKEND_TOKENS_FILE), scope (a read token writing); and failed reads of BACKEND_TOKENS_FILE (KvBackendTokensReloadFailing). All stay at 0 on a backend without BACKEND_TOKENS_FILE.',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [
          query(`sum by (instance) (${perWindow(300, 'kvbackend_auth_failures_total')})`, 'refused {{instance}}'),
          query(`sum by (reason) (${perWindow(300, 'kvbackend_auth_failures_total')})`, 'all backends: {{reason}}'),
          query(perWindow(300, 'kvbackend_tokens_reload_failures_total'), 'failed token reloads {{instance}}'),
        ],
        thresholds: { steps: steps(T.KvBackendAuthFailures, ['red']) },
      }),
      timeseries({
        title: 'HTTPS certificate: days left',
        description:
          'Days until the certificate each backend presents on its HTTP port expires (kvbackend_tls_certificate_expiry_timestamp_seconds; KvBackendCertificateExpiring fires below the line; it jumps up when a renewed certificate is reloaded), and per 5 minutes at the current rate: failed reloads of BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE (KvBackendTlsReloadFailing) and failed handshakes by reason (kvbackend_tls_handshake_failures_total: plain HTTP on the HTTPS port, time-outs). Backends without HTTPS have none of these series: no days-left line, the counts at 0.',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [
          // Without HTTPS there is no series: NaN draws nothing (0 would read as expired), and the query still answers.
          query(`(${sel('kvbackend_tls_certificate_expiry_timestamp_seconds')} - time()) / 86400 or on() vector(NaN)`, 'days left {{instance}}'),
          query(`${perWindow(300, 'kvbackend_tls_reload_failures_total')} or on() vector(0)`, 'failed reloads {{instance}}'),
          query(`sum by (reason) (${perWindow(300, 'kvbackend_tls_handshake_failures_total')}) or on() vector(0)`, 'failed handshakes: {{reason}}'),
        ],
        thresholds: { steps: steps(T.KvBackendCertificateExpiring, ['red']) },
      }),
    ]),

    row('Store shards', [
      timeseries({
        title: 'Shard up',
        description: 'Each store shard as the backends\' USAGE probe sees it (kvbackend_store_up by shard; the lowest over the backends). KvBackendStoreShardDown fires after a minute at 0 while other shards answer; KvBackendStoreUnreachable when none does.',
        unit: 'none',
        width: 8,
        min: 0,
        max: 1,
        mappings: reachable,
        queries: [query(`min by (shard) (${sel('kvbackend_store_up')})`, '{{shard}}')],
      }),
      timeseries({
        title: 'Shards by state and ring changes',
        description: 'Configured shards up, down (unreachable or silent) or ejected from the ring (kvbackend_store_shards; KvBackendStoreShardEjected), and rings swapped in per minute: ejections, readmissions, membership changes (kvbackend_store_ring_changes_total).',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [
          query(`max by (state) (${sel('kvbackend_store_shards')})`, '{{state}}'),
          query(`sum(${perWindow(60, 'kvbackend_store_ring_changes_total')})`, 'ring changes/min'),
        ],
      }),
      timeseries({
        title: 'Shard usage against the cap',
        description: 'Each store shard\'s USAGE over its MAX_MEMORY_BYTES (every store is a shard: one line per store instance). Red at the KvStoreMemoryHigh alert.',
        unit: 'percentunit',
        width: 8,
        min: 0,
        max: 1,
        queries: [query(memoryRatio, '{{instance}}')],
        thresholds: { steps: steps(T.KvStoreMemoryHigh, ['red']) },
      }),
      timeseries({
        title: 'Store commands/s by shard',
        description: 'Store commands the backends sent to each shard (kvbackend_store_commands_total by shard): the ring spreads keys evenly, so an outlier is a hot key.',
        unit: 'ops',
        width: 8,
        min: 0,
        queries: [query(`sum by (shard) (${rate('kvbackend_store_commands_total')})`, '{{shard}}')],
      }),
      timeseries({
        title: 'Key spread',
        description: 'Bytes held by the fullest shard over the average shard (kvbackend_store_usage_bytes by shard, from each backend\'s probe). The ring keeps keys within a few percent; KvBackendStoreShardSpreadUnbalanced fires above the line for an hour.',
        unit: 'none',
        width: 8,
        min: 0,
        queries: [
          query(`max without (shard) (${sel('kvbackend_store_usage_bytes')}) / avg without (shard) (${sel('kvbackend_store_usage_bytes')})`, 'fullest / average {{instance}}'),
        ],
        thresholds: { steps: steps(T.KvBackendStoreShardSpreadUnbalanced, ['red']) },
      }),
      timeseries({
        title: 'Store errors/s by shard',
        description: 'Failed store commands by shard and kind (kvbackend_store_errors_total): which shard fails, and how (timeout 504, unavailable 503, protocol 502, max_connections).',
        unit: 'ops',
        width: 8,
        min: 0,
        queries: [query(`sum by (shard, kind) (${rate('kvbackend_store_errors_total')})`, '{{shard}} {{kind}}')],
      }),
      timeseries({
        title: 'Shard discovery',
        description:
          'With KV_STORE=dnssrv+ or dns+: seconds since each backend\'s last DNS lookup that found shards (kvbackend_store_discovery_last_success_timestamp_seconds) and its failed, timed-out or empty lookups per 5 minutes at the current rate (kvbackend_store_discovery_failures_total). KvBackendStoreDiscoveryFailing fires past 300 s while lookups fail. Backends that list their shards have neither series: both lines stay at 0.',
        unit: 'short',
        width: 8,
        min: 0,
        queries: [
          query(`max by (instance) (time() - ${sel('kvbackend_store_discovery_last_success_timestamp_seconds')}) or on() vector(0)`, 'seconds since a lookup found shards {{instance}}'),
          query(`sum by (instance) (${perWindow(300, 'kvbackend_store_discovery_failures_total')}) or on() vector(0)`, 'failed lookups / 5m {{instance}}'),
        ],
      }),
    ]),

    row('Processes', [
      timeseries({
        title: 'CPU',
        description: 'CPU time per second of each Node.js process (1 = one core); a Node service runs its JavaScript on one core.',
        unit: 'percentunit',
        width: 8,
        min: 0,
        queries: [query(rate('process_cpu_seconds_total'), '{{job}} {{instance}}')],
      }),
      timeseries({
        title: 'Memory',
        description: 'Resident set size and V8 heap in use of each process. The store holds values outside the V8 heap, in Buffers.',
        unit: 'bytes',
        width: 8,
        min: 0,
        queries: [
          query(sel('process_resident_memory_bytes'), 'rss {{job}} {{instance}}'),
          query(sel('nodejs_heap_size_used_bytes'), 'heap {{job}} {{instance}}'),
        ],
      }),
      timeseries({
        title: 'Event-loop lag p50 / p99',
        description: 'How late timers fire on each process\'s event loop: a busy or blocked loop delays every request.',
        unit: 's',
        width: 8,
        min: 0,
        queries: [
          query(sel('nodejs_eventloop_lag_p50_seconds'), 'p50 {{job}} {{instance}}'),
          query(sel('nodejs_eventloop_lag_p99_seconds'), 'p99 {{job}} {{instance}}'),
        ],
      }),
      timeseries({
        title: 'Open file descriptors',
        description: 'Sockets and files open per process; each store client connection takes one.',
        unit: 'short',
        width: 12,
        min: 0,
        queries: [query(sel('process_open_fds'), '{{job}} {{instance}}')],
      }),
      timeseries({
        title: 'Uptime',
        description: 'Time since each process started: a drop to zero is a restart.',
        unit: 's',
        width: 12,
        min: 0,
        queries: [query(`time() - ${sel('process_start_time_seconds')}`, '{{job}} {{instance}}')],
      }),
    ]),
  ],
});
