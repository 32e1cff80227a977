// The Testcontainers module, published as `kvstack/testcontainers` (docs/testcontainers.md):
// the store and the backend in containers for a user's tests. Needs the `testcontainers`
// package, an optional peer dependency of kvstack.
export { KvstackContainer, StartedKvstackContainer, KVSTACK_STORE_IMAGE, STORE_PORT, STORE_ADMIN_PORT, SNAPSHOT_DIR, type EvictionPolicy, type SnapshotOptions, type StoreTlsOptions } from './kvstack-container.ts';
export { KvstackBackendContainer, StartedKvstackBackendContainer, KVSTACK_BACKEND_IMAGE, BACKEND_HTTP_PORT, BACKEND_ADMIN_PORT } from './kvstack-backend-container.ts';
