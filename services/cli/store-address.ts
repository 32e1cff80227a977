import type { LookupFunction } from 'node:net';
import { DiscoveryError, ShardResolver } from '../client/shard-resolver.ts';
import { hostPort, type HostPort } from '../config/setting-parsers.ts';
import { isDiscovery, parseStoreSource, type StoreDiscovery, type StoreShard } from '../config/store-list.ts';
import { ConfigError } from '../shared/config-error.ts';
import { UsageError } from './usage-error.ts';

export const DEFAULT_STORE = '127.0.0.1:8765';

interface StoreOptions {
  readonly store?: string | undefined;
  readonly host?: string | undefined;
  readonly port?: string | undefined;
}

/** The stores `kv` talks to, and how their names become addresses on each connect. */
export interface StoreTargets {
  readonly shards: readonly StoreShard[];
  /** Set when the shards were found through KV_STORE_DNS_SERVER, which then answers their addresses too. */
  readonly lookup?: LookupFunction;
}

type Env = Record<string, string | undefined>;

/** `--store`, else `KV_STORE` (or the default), and the name of where it came from. */
function storeSetting(env: Env, store: string | undefined): [raw: string, source: string] {
  return store !== undefined ? [store.trim(), '--store'] : [env.KV_STORE?.trim() || DEFAULT_STORE, 'KV_STORE'];
}

function parseSource(raw: string, source: string) {
  try {
    return parseStoreSource(raw, source);
  } catch (err) {
    throw new UsageError(err instanceof ConfigError ? err.message : String(err));
  }
}

/**
 * The stores to talk to, as the backend finds them: `--store`, else `KV_STORE` (one
 * address, a list of shards, or DNS discovery, looked up once through the system's
 * resolvers or `KV_STORE_DNS_SERVER`). A lookup that fails or finds nothing is an error
 * naming the address (exit 2).
 */
export async function findStoreTargets(env: Env, options: StoreOptions): Promise<StoreTargets> {
  const [raw, source] = storeSetting(env, options.store);
  const parsed = options.host !== undefined && options.port !== undefined ? undefined : parseSource(raw, source);
  if (parsed === undefined || !isDiscovery(parsed)) return { shards: resolveStoreShards(env, options) };
  if (options.host !== undefined || options.port !== undefined) {
    throw new UsageError(`--${options.host !== undefined ? 'host' : 'port'} alone changes one store's address, but ${source} is DNS discovery (give both --host and --port)`);
  }
  const resolver = new ShardResolver({ dnsServer: dnsServer(env) });
  try {
    const members = await resolver.members(parsed);
    return { shards: members.map((m) => Object.freeze({ ...m, address: formatAddress(m) })), lookup: resolver.connectLookup };
  } catch (err) {
    throw new Error(`${source}=${parsed.entry}: ${describeFailure(parsed, err)}`);
  }
}

function describeFailure(entry: StoreDiscovery, err: unknown): string {
  if (!(err instanceof DiscoveryError)) return err instanceof Error ? err.message : String(err);
  const what = entry.kind === 'dnssrv' ? 'no store shard found in DNS' : 'no store address found in DNS';
  return `${what} (${err.message})`;
}

function dnsServer(env: Env): HostPort | undefined {
  const raw = env.KV_STORE_DNS_SERVER?.trim();
  if (!raw) return undefined;
  try {
    return hostPort(raw, 'KV_STORE_DNS_SERVER');
  } catch (err) {
    throw new UsageError(err instanceof ConfigError ? err.message : String(err));
  }
}

/**
 * The stores to talk to when they are written out: `--store`, else `KV_STORE` (one
 * address or a list of shards, as the backend reads it). `--host` / `--port` override
 * either half of a single store. DNS discovery needs findStoreTargets.
 */
export function resolveStoreShards(env: Env, options: StoreOptions): readonly StoreShard[] {
  const { store, host, port } = options;
  if (store !== undefined && (host !== undefined || port !== undefined)) throw new UsageError('--store names the stores: it cannot be combined with --host or --port');
  if (host !== undefined && port !== undefined) return [single(override({ host: '', port: 0 }, host, port))]; // nothing left to take from KV_STORE
  const [raw, source] = storeSetting(env, store);
  const parsed = parseSource(raw, source);
  if (isDiscovery(parsed)) throw new UsageError(`this command drives one store, but ${source} is DNS discovery (${parsed.entry}); name one with --host and --port`);
  const shards = parsed;
  if (host === undefined && port === undefined) return shards;
  if (shards.length > 1) throw new UsageError(`--${host !== undefined ? 'host' : 'port'} alone changes one store's address, but ${source} lists ${shards.length} shards (give both --host and --port)`);
  return [single(override(shards[0]!, host, port))];
}

function single(address: HostPort): StoreShard {
  const written = formatAddress(address);
  return Object.freeze({ name: written, address: written, ...address });
}

/** One store (kv bench): `KV_STORE` with `--host` / `--port` overriding either half. */
export function resolveStoreAddress(env: Env, host?: string, port?: string): HostPort {
  const shards = resolveStoreShards(env, { host, port });
  if (shards.length > 1) throw new UsageError(`this command drives one store, but KV_STORE lists ${shards.length} shards (name one with --host and --port)`);
  return { host: shards[0]!.host, port: shards[0]!.port };
}

function override(base: HostPort, host: string | undefined, port: string | undefined): HostPort {
  let resolvedPort = base.port;
  if (port !== undefined) {
    if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) throw new UsageError(`--port ${JSON.stringify(port)}: expected a port from 1 to 65535`);
    resolvedPort = Number(port);
  }
  if (host !== undefined && !/^[A-Za-z0-9.\-:_[\]]+$/.test(host)) throw new UsageError(`--host ${JSON.stringify(host)}: expected a hostname or IP address`);
  return { host: host ?? base.host, port: resolvedPort };
}

/** host:port for messages and the prompt (IPv6 literals in brackets). */
export function formatAddress({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
