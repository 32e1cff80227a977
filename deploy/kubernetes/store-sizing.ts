// What a store shard needs on Kubernetes for a given MAX_MEMORY_BYTES: its memory request
// and limit, the start-up probe's budget for loading the largest snapshot that cap allows,
// the grace period for writing it at shutdown, and the snapshot volume. Derived from the
// bounds and rates the store documents, never typed in by hand: generate.ts writes them
// into base/store-sizing.yaml, test/kubernetes-policy.test.ts checks the rendered
// manifests against them, and docs/kubernetes.md#sizing tabulates them.
import { storeRssBoundBytes } from '../../grafana/alert-thresholds.ts';
import { FOOTPRINT_FACTOR, MAX_KEYS } from '../../services/store/engine/kv-engine.ts';
import { arenaPageTarget, arenaSlackBytes } from '../../services/store/engine/record-arena.ts';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/**
 * The documented snapshot figures (docs/benchmarks.md#snapshots): 1,000,000 keys of 100
 * bytes, a 124 MiB file, load in at most 1.1 s and save in 0.5 s (the slowest rounds of
 * the latest run).
 */
export const SNAPSHOT_RATES = { keys: 1_000_000, fileBytes: 124 * MiB, loadSeconds: 1.1, saveSeconds: 0.5 } as const;

/** Writing to disk and fsyncing: about a second per GiB on an ordinary disk (docs/warm-restart.md). */
const DISK_SECONDS_PER_BYTE = 1 / GiB;

/**
 * The figures come from an otherwise idle 2-core VM with the file in the page cache; a
 * node busy with other pods, or a cold network disk, is slower. The same load ran 3.3x
 * slower on a 2-core VM at a load average of 9 (docs/kubernetes.md#sizing).
 */
export const SLOWDOWN = 4;

/** Node starting, the modules loading and the code warming up, before the load begins. */
export const START_SECONDS = 20;

/** Answering what was received and closing connections before the shutdown snapshot. */
export const DRAIN_SECONDS = 5;

/** What each key costs at least beside its bytes: slot, expiry, bucket and chunk owner (docs/limits-and-capacity.md). */
export const MIN_KEY_FOOTPRINT_BYTES = 50;

/** Snapshot format version 1 (docs/warm-restart.md#the-file-format-version-1). */
const FILE_HEADER_BYTES = 24;
const FILE_TRAILER_BYTES = 13;
const RECORD_HEADER_BYTES = 14;

/** Probe period of the start-up probe in base/store-statefulset.yaml. */
export const STARTUP_PROBE_PERIOD_SECONDS = 5;

/** The settings the sizing reads from the manifests. */
export interface SizingInputs {
  /** The store's MAX_MEMORY_BYTES. */
  readonly maxMemoryBytes: number;
  /** The store's MAX_VALUE_BYTES. */
  readonly maxValueBytes: number;
  /** Connections that may reach one shard: the backend's STORE_POOL_SIZE times the autoscaler's maxReplicas. */
  readonly storeConnections: number;
}

export interface StoreSizing {
  /** The most keys the footprint limit lets a store with this cap hold. */
  readonly maxKeys: number;
  /** The largest snapshot file such a store writes. */
  readonly maxSnapshotBytes: number;
  /** The stated RSS bound (grafana/alert-thresholds.ts). */
  readonly rssBoundBytes: number;
  /** Memory request and limit, equal: the bound plus three values in flight per connection. */
  readonly memoryBytes: number;
  /** Seconds to load the largest snapshot, at the documented rates times SLOWDOWN. */
  readonly loadSeconds: number;
  /** Seconds to save it. */
  readonly saveSeconds: number;
  /** The start-up probe's failureThreshold (times STARTUP_PROBE_PERIOD_SECONDS). */
  readonly startupFailureThreshold: number;
  readonly terminationGracePeriodSeconds: number;
  /** The snapshot volume: the file and the temporary one written beside it before the rename. */
  readonly volumeBytes: number;
}

const ceilTo = (value: number, step: number): number => Math.ceil(value / step) * step;

export function storeSizing({ maxMemoryBytes, maxValueBytes, storeConnections }: SizingInputs): StoreSizing {
  // The footprint limit as the engine sets it (services/store/engine/kv-engine.ts), and the fewest bytes a key takes in it.
  const footprintLimit = FOOTPRINT_FACTOR * maxMemoryBytes + arenaSlackBytes(arenaPageTarget(maxMemoryBytes)) + MiB;
  const maxKeys = Math.min(MAX_KEYS, Math.floor(footprintLimit / MIN_KEY_FOOTPRINT_BYTES));
  // USAGE (key and value bytes) stays within the cap; each record adds its header.
  const maxSnapshotBytes = FILE_HEADER_BYTES + maxMemoryBytes + RECORD_HEADER_BYTES * maxKeys + FILE_TRAILER_BYTES;
  // Each rate is applied as if the whole measured time were spent per key, then as if
  // per byte, and the two are added: many tiny keys and few large ones are both covered.
  const r = SNAPSHOT_RATES;
  const loadSeconds = SLOWDOWN * ((maxKeys / r.keys) * r.loadSeconds + (maxSnapshotBytes / r.fileBytes) * r.loadSeconds);
  const saveSeconds =
    SLOWDOWN * ((maxKeys / r.keys) * r.saveSeconds + (maxSnapshotBytes / r.fileBytes) * r.saveSeconds + maxSnapshotBytes * DISK_SECONDS_PER_BYTE);
  const rssBoundBytes = storeRssBoundBytes(maxMemoryBytes);
  // The bound leaves out large values in flight: up to three times MAX_VALUE_BYTES for
  // each connection moving one (docs/limits-and-capacity.md#sizing-memory).
  const memoryBytes = ceilTo(rssBoundBytes + 3 * maxValueBytes * storeConnections, MiB);
  return {
    maxKeys,
    maxSnapshotBytes,
    rssBoundBytes,
    memoryBytes,
    loadSeconds,
    saveSeconds,
    startupFailureThreshold: Math.ceil((START_SECONDS + loadSeconds) / STARTUP_PROBE_PERIOD_SECONDS),
    terminationGracePeriodSeconds: Math.max(30, ceilTo(DRAIN_SECONDS + saveSeconds, 10)),
    volumeBytes: Math.max(GiB, ceilTo(2 * maxSnapshotBytes, GiB)),
  };
}

/** A byte count as a Kubernetes quantity in Mi or Gi (exact: the values are multiples). */
export function quantity(bytes: number): string {
  if (bytes % GiB === 0) return `${bytes / GiB}Gi`;
  if (bytes % MiB === 0) return `${bytes / MiB}Mi`;
  return String(bytes);
}

/** Parses the Kubernetes quantities the manifests use (plain bytes, Ki/Mi/Gi/Ti, k/M/G/T) into bytes. */
export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q);
  if (!m) throw new Error(`not a memory quantity this parser knows: ${q}`);
  const unit = { Ki: 1024, Mi: MiB, Gi: GiB, Ti: 1024 * GiB, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}
