// The HTTP backend: the app (for tests and embedding), the service (app + ring of store pools + admin port), and their parts.
export { createBackendApp, type BackendAppOptions, type BackendStore } from './backend-app.ts';
export { startBackendService, type BackendDeps, type BackendService } from './backend-service.ts';
export { createBackendMetrics, type BackendMetrics } from './backend-metrics.ts';
export { startStoreMonitor, type StoreMonitor } from './store-monitor.ts';
export { keyFromPath, type KeyResult } from './key-from-path.ts';
export { errorReplies, ALLOWED_METHODS } from './http-replies.ts';
