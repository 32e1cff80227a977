// The store client library: what the backend, the kv CLI, the benchmarks and the tests use.
export { StoreConnection, type StoreConnectionOptions, type ConnectionState } from './store-connection.ts';
export { CommandPipeline, type CommandPipelineOptions, type PipelineTransport } from './command-pipeline.ts';
export { StoreSocket, defaultReconnectStrategy, type StoreSocketOptions, type StoreSocketHandlers, type ReconnectStrategy } from './store-socket.ts';
export { StorePool, type StorePoolOptions } from './store-pool.ts';
export { StoreCommands, type CommandObserver, type CommandResult, type Payload } from './store-commands.ts';
export { ShardedStore, type ShardedStoreOptions, type Shard, type ShardAddress } from './sharded-store.ts';
export { ShardResolver, DiscoveryError, addressName, type ShardResolverOptions } from './shard-resolver.ts';
export { startShardDiscovery, type ShardDiscovery, type ShardDiscoveryOptions, type DiscoveredShard } from './shard-discovery.ts';
export { probeUsage, type ProbeTarget } from './probe-usage.ts';
export * from './errors.ts';
