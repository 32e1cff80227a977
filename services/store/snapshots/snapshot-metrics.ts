import type { Registry } from 'prom-client';
import { Counter, Gauge, Histogram } from '../../shared/prometheus.ts';

/** The snapshot series of SPEC §7, on the store's registry. */
export interface SnapshotMetrics {
  /** A snapshot was written and put in place. */
  saved(durationSeconds: number, bytes: number, atMs: number): void;
  /** A save failed, or a file could not be loaded. */
  failed(): void;
  /** Keys taken from the file at start-up. */
  loaded(keys: number): void;
}

/** `intervalSeconds`: STORE_SNAPSHOT_INTERVAL_S, exported so the staleness alert can compare against it. */
export function createSnapshotMetrics(registry: Registry, intervalSeconds: number): SnapshotMetrics {
  const lastSuccess = new Gauge({
    name: 'kvstore_snapshot_last_success_timestamp_seconds',
    help: 'Unix time of the last snapshot written successfully (0: none since start).',
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'kvstore_snapshot_duration_seconds',
    help: 'Time to write a snapshot, from its point in time to the rename.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const size = new Gauge({ name: 'kvstore_snapshot_size_bytes', help: 'Size of the last snapshot written.', registers: [registry] });
  const failures = new Counter({
    name: 'kvstore_snapshot_failures_total',
    help: 'Snapshots that could not be written (disk full, permissions) or loaded (truncated, corrupted, unknown version).',
    registers: [registry],
  });
  const loadedKeys = new Gauge({ name: 'kvstore_snapshot_loaded_keys', help: 'Keys loaded from the snapshot at start-up.', registers: [registry] });
  new Gauge({
    name: 'kvstore_snapshot_interval_seconds',
    help: 'STORE_SNAPSHOT_INTERVAL_S: seconds between periodic snapshots (0: only at shutdown, or snapshots off).',
    registers: [registry],
  }).set(intervalSeconds);
  lastSuccess.set(0);
  return {
    saved(seconds, bytes, atMs) {
      duration.observe(seconds);
      size.set(bytes);
      lastSuccess.set(atMs / 1000);
    },
    failed: () => failures.inc(),
    loaded: (keys) => loadedKeys.set(keys),
  };
}
