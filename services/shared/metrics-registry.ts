import { Registry, collectDefaultMetrics } from './prometheus.ts';

/**
 * A fresh registry per service instance, with the process metrics (CPU, memory,
 * event-loop lag, GC) that dashboards show next to the service's own.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  return registry;
}
