// The client library's public surface, published as `kvstack/client` (docs/client.md).
// What is exported here is versioned in CHANGELOG.md; the other modules of this folder
// (the socket, the pipeline, DNS discovery, the probe) are internal and may change.
export { StoreConnection, type StoreConnectionOptions, type ConnectionState } from './store-connection.ts';
export { StorePool, type StorePoolOptions } from './store-pool.ts';
export { StoreCommands, type CommandObserver, type CommandResult, type Payload } from './store-commands.ts';
export { ShardedStore, type ShardedStoreOptions, type Shard, type ShardAddress } from './sharded-store.ts';
export { defaultReconnectStrategy, type ReconnectStrategy } from './store-socket.ts';
export { parseStoreUrl, formatStoreUrl, DEFAULT_STORE_PORT, type StoreUrlOptions } from './store-url.ts';
export { Secret } from '../shared/secret.ts';
export { TlsFileSource, TlsMaterialSource, type ClientTls, type StoreTlsConnectOptions } from './client-tls.ts';
export * from './errors.ts';
