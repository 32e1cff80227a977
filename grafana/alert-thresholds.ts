// The static thresholds of alert-rules.yml, for drawing on the dashboard panels of the
// same metric. test/observability-config.test.ts checks that each alert's expression
// compares against exactly these numbers, so the two files cannot drift apart.
export const ALERT_THRESHOLDS = {
  KvStoreMemoryHigh: [0.9],
  KvStoreHighEvictionRate: [100],
  KvStoreConnectionsHigh: [0.8, 0.95],
  KvStoreLowHitRate: [0.5],
  KvStoreAuthFailures: [20],
  KvStoreTlsCertificateExpiring: [14],
  KvBackendAuthFailures: [100],
  KvBackendCertificateExpiring: [14],
  KvBackend5xxRatioHigh: [0.05],
  KvBackendLatencyP99High: [0.25],
  KvBackendStoreShardSpreadUnbalanced: [1.5],
} as const satisfies Record<string, readonly number[]>;

/**
 * The resident memory the store states it stays within: RSS at most capFactor x
 * MAX_MEMORY_BYTES + baseBytes (docs/limits-and-capacity.md#sizing-memory). The one
 * source of that bound: KvStoreRssAboveBound's expression must use exactly these numbers
 * (test/observability-config.test.ts), the dashboard draws it, and the Kubernetes
 * manifests size the store's memory limit from it (deploy/kubernetes/store-sizing.ts).
 */
export const STORE_RSS_BOUND = { capFactor: 1.5, baseBytes: 200 * 1024 * 1024 } as const;

/** The RSS bound of a store with this MAX_MEMORY_BYTES. */
export const storeRssBoundBytes = (maxMemoryBytes: number): number => STORE_RSS_BOUND.capFactor * maxMemoryBytes + STORE_RSS_BOUND.baseBytes;

/** The error budget of the backend's availability objective, 99.9% (alert-rules.yml, group kvbackend-slo). */
export const SLO_ERROR_BUDGET = 0.001;

/** Burn rates the SLO alerts fire at: 14.4x and 6x page, 3x and 1x open a ticket. */
export const SLO_BURN_RATES = [1, 3, 6, 14.4] as const;
