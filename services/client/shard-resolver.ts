import { lookup as systemLookup, type LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import type { HostPort } from '../config/setting-parsers.ts';
import type { StoreDiscovery } from '../config/store-list.ts';
import type { ShardAddress } from './sharded-store.ts';

/** Why a discovery lookup gave no members: it failed, timed out, or found nothing. */
export class DiscoveryError extends Error {
  override name = 'DiscoveryError';
  readonly reason: 'failed' | 'timeout' | 'empty';
  constructor(message: string, reason: 'failed' | 'timeout' | 'empty') {
    super(message);
    this.reason = reason;
  }
}

export interface ShardResolverOptions {
  /** KV_STORE_DNS_SERVER: the server asked for every record; undefined = the system's resolvers. */
  readonly dnsServer?: HostPort;
  /** How long one query waits for its answer before it is sent again (once), in ms. */
  readonly timeoutMs?: number;
}

/** DNS codes that mean "no such records" rather than "the lookup did not work". */
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

const errorCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

/** `host:port`, an IPv6 address in brackets: the name of a shard found by its address. */
export function addressName(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The DNS side of discovery (SPEC §6): the members an entry names now, and the addresses
 * of one host. With KV_STORE_DNS_SERVER every question goes to that server, the SRV
 * targets' addresses too (so a Consul agent or a test's own server answers for names the
 * system has never heard of); without it, SRV records come from the system's resolvers
 * and addresses from the system's own lookup, as a plain host:port would.
 */
export class ShardResolver {
  readonly #resolver: Resolver;
  readonly #custom: boolean;
  /** The lookup a store connection uses on each connect, when addresses come from KV_STORE_DNS_SERVER. */
  readonly connectLookup: LookupFunction | undefined;

  constructor({ dnsServer, timeoutMs = 2000 }: ShardResolverOptions = {}) {
    // One retry: a lost UDP datagram is retried once; a silent server fails within ~3 time-outs (c-ares doubles the second wait).
    this.#resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
    this.#custom = dnsServer !== undefined;
    if (dnsServer) this.#resolver.setServers([addressName(dnsServer.host, dnsServer.port)]);
    this.connectLookup = this.#custom ? this.#lookupForConnect : undefined;
  }

  /** The members the entry names now, sorted by name; a DiscoveryError when none can be had. */
  async members(source: StoreDiscovery): Promise<ShardAddress[]> {
    if (source.kind === 'dns') {
      const addresses = await this.addresses(source.host, source.entry);
      return addresses.map((host) => ({ name: addressName(host, source.port), host, port: source.port })).sort(byName);
    }
    let records;
    try {
      records = await this.#resolver.resolveSrv(source.name);
    } catch (err) {
      throw this.#failure(err, `SRV ${source.name}`);
    }
    // One shard per target host: a target listed twice keeps its most preferred record.
    // A target of "." says the service is not offered there.
    records.sort((a, b) => a.priority - b.priority || b.weight - a.weight || a.port - b.port);
    const byTarget = new Map<string, ShardAddress>();
    for (const r of records) {
      const target = r.name.toLowerCase().replace(/\.$/, '');
      if (target === '' || byTarget.has(target)) continue;
      byTarget.set(target, { name: target, host: target, port: r.port });
    }
    if (byTarget.size === 0) throw new DiscoveryError(`SRV ${source.name}: no targets`, 'empty');
    return [...byTarget.values()].sort(byName);
  }

  /** The addresses of a host (IPv4 first); a DiscoveryError when it has none or the lookup fails. */
  async addresses(host: string, what = host): Promise<string[]> {
    if (isIP(host)) return [host];
    if (!this.#custom) {
      try {
        const found = await new Promise<LookupAddress[]>((resolve, reject) =>
          systemLookup(host, { all: true, order: 'ipv4first' }, (err, list) => (err ? reject(err) : resolve(list))),
        );
        if (found.length === 0) throw new DiscoveryError(`${what}: no addresses`, 'empty');
        return [...new Set(found.map((a) => a.address))];
      } catch (err) {
        throw this.#failure(err, what);
      }
    }
    const [v4, v6] = await Promise.allSettled([this.#resolver.resolve4(host), this.#resolver.resolve6(host)]);
    const found = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (found.length > 0) return found;
    const failure = [v4, v6].find((r): r is PromiseRejectedResult => r.status === 'rejected' && !NO_RECORDS.has(errorCode(r.reason) ?? ''));
    if (failure) throw this.#failure(failure.reason, what);
    throw new DiscoveryError(`${what}: no A or AAAA records`, 'empty');
  }

  /** Cancels the queries in flight (they fail with ECANCELLED). */
  cancel(): void {
    this.#resolver.cancel();
  }

  #failure(err: unknown, what: string): DiscoveryError {
    if (err instanceof DiscoveryError) return err;
    const code = errorCode(err);
    if (code !== undefined && NO_RECORDS.has(code)) return new DiscoveryError(`${what}: no records (${code})`, 'empty');
    if (code === 'ETIMEOUT') return new DiscoveryError(`${what}: the DNS server did not answer (${code})`, 'timeout');
    return new DiscoveryError(`${what}: ${err instanceof Error ? err.message : String(err)}`, 'failed');
  }

  /** net.connect's lookup, answered by KV_STORE_DNS_SERVER: a shard's address is looked up again on every connect. */
  readonly #lookupForConnect: LookupFunction = (hostname, options, callback) => {
    this.addresses(hostname).then(
      (found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const list = found.map((address) => ({ address, family: isIP(address) })).filter((a) => family === 0 || a.family === family);
        if (list.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`${hostname}: no address of family ${family}`);
          err.code = 'ENOTFOUND';
          return callback(err, '', 0);
        }
        if (options.all) (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      },
      (err: DiscoveryError) => {
        const failure: NodeJS.ErrnoException = new Error(err.message);
        failure.code = err.reason === 'timeout' ? 'ETIMEOUT' : 'ENOTFOUND';
        callback(failure, '', 0);
      },
    );
  };
}

const byName = (a: ShardAddress, b: ShardAddress): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
