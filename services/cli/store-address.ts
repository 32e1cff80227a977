import type { HostPort } from '../config/setting-parsers.ts';
import { parseStoreList, type StoreShard } from '../config/store-list.ts';
import { ConfigError } from '../shared/config-error.ts';
import { UsageError } from './usage-error.ts';

export const DEFAULT_STORE = '127.0.0.1:8765';

interface StoreOptions {
  readonly store?: string | undefined;
  readonly host?: string | undefined;
  readonly port?: string | undefined;
}

/**
 * The stores to talk to: `--store`, else `KV_STORE` (one address or a list of shards,
 * as the backend reads it). `--host` / `--port` override either half of a single store.
 */
export function resolveStoreShards(env: Record<string, string | undefined>, options: StoreOptions): readonly StoreShard[] {
  const { store, host, port } = options;
  if (store !== undefined && (host !== undefined || port !== undefined)) throw new UsageError('--store names the stores: it cannot be combined with --host or --port');
  if (host !== undefined && port !== undefined) return [single(override({ host: '', port: 0 }, host, port))]; // nothing left to take from KV_STORE
  const [raw, source] = store !== undefined ? [store.trim(), '--store'] : [env.KV_STORE?.trim() || DEFAULT_STORE, 'KV_STORE'];
  let shards: readonly StoreShard[];
  try {
    shards = parseStoreList(raw, source);
  } catch (err) {
    throw new UsageError(err instanceof ConfigError ? err.message : String(err));
  }
  if (host === undefined && port === undefined) return shards;
  if (shards.length > 1) throw new UsageError(`--${host !== undefined ? 'host' : 'port'} alone changes one store's address, but ${source} lists ${shards.length} shards (give both --host and --port)`);
  return [single(override(shards[0]!, host, port))];
}

function single(address: HostPort): StoreShard {
  const written = formatAddress(address);
  return Object.freeze({ name: written, address: written, ...address });
}

/** One store (kv bench): `KV_STORE` with `--host` / `--port` overriding either half. */
export function resolveStoreAddress(env: Record<string, string | undefined>, host?: string, port?: string): HostPort {
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
