// The static thresholds of alert-rules.yml, for drawing on the dashboard panels of the
// same metric. test/observability-config.test.ts checks that each alert's expression
// compares against exactly these numbers, so the two files cannot drift apart.
export const ALERT_THRESHOLDS = {
  KvStoreMemoryHigh: [0.9],
  KvStoreHighEvictionRate: [100],
  KvStoreConnectionsHigh: [0.8, 0.95],
  KvStoreLowHitRate: [0.5],
  KvBackend5xxRatioHigh: [0.05],
  KvBackendLatencyP99High: [0.25],
  KvBackendStoreShardSpreadUnbalanced: [1.5],
} as const satisfies Record<string, readonly number[]>;

/** The error budget of the backend's availability objective, 99.9% (alert-rules.yml, group kvbackend-slo). */
export const SLO_ERROR_BUDGET = 0.001;

/** Burn rates the SLO alerts fire at: 14.4x and 6x page, 3x and 1x open a ticket. */
export const SLO_BURN_RATES = [1, 3, 6, 14.4] as const;
