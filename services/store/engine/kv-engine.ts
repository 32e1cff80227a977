export * from './keyspace.ts';
