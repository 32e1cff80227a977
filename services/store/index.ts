// The store: the service (engine + TCP protocol + admin port), and its parts.
export { startStoreService, type StoreDeps, type StoreService } from './store-service.ts';
export { StoreServer, type StoreServerOptions, type ConnectionFlow } from './network/tcp-server.ts';
export { createStoreMetrics, StoreMetrics, DURATION_BUCKETS, PROTOCOL_ERROR_REASONS } from './store-metrics.ts';
export { KvEngine } from './engine/kv-engine.ts';
export { ValueRange, type EngineStats, type StoreEngine, type SetOutcome } from './engine/engine-api.ts';
