import { memberSeed } from '../ring/shard-ring.ts';
import { ConfigError } from '../shared/config-error.ts';
import { hostPort, type HostPort } from './setting-parsers.ts';

// KV_STORE (backend) and KV_STORE / --store (kv): one store, a ring of shards, or the
// DNS name that lists them (SPEC §6).
//   source    := list | discovery
//   list      := entry ("," entry)*
//   entry     := [name "="] address
//   address   := host ":" port | "[" IPv6 "]" ":" port
//   discovery := "dnssrv+" srv-name | "dns+" host ":" port
// A shard's name is its identity on the ring and its `shard` metric label; it defaults
// to the entry as written (trimmed). A list of one entry is a single store, as a plain host:port.
// A discovery entry stands alone: its shards, and their names, come from DNS.

export interface StoreShard extends HostPort {
  /** The shard's identity: places it on the ring, labels its metrics. */
  readonly name: string;
  /** The address as written (IPv6 in brackets), for messages. */
  readonly address: string;
}

/** Shards found in DNS: SRV records (one shard per target host) or A/AAAA records (one per address). */
export type StoreDiscovery =
  | { readonly kind: 'dnssrv'; /** The entry as written, for messages. */ readonly entry: string; /** The SRV name looked up. */ readonly name: string }
  | { readonly kind: 'dns'; readonly entry: string; /** The name whose A/AAAA records are the shards. */ readonly host: string; readonly port: number };

/** What KV_STORE names: the shards themselves, or where DNS lists them. */
export type StoreSource = readonly StoreShard[] | StoreDiscovery;

export function isDiscovery(source: StoreSource): source is StoreDiscovery {
  return !Array.isArray(source);
}

/** Explicit names: letters, digits, `.`, `_`, `-` (a Kubernetes pod name fits; a default name is the entry itself). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const DISCOVERY = /^(dnssrv|dns)\+/i;
/** A DNS name as SRV names are written (`_kv._tcp.store.ns.svc.cluster.local`), with an optional final dot. */
const DNS_NAME = /^(?=.{1,254}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$/;

/** One refusal: the variable, the entry (and its place when there are several), the reason. */
function refuse(env: string, entry: string, index: number, count: number, reason: string): never {
  const where = count === 1 ? `${env}=${JSON.stringify(entry)}` : `${env} entry ${index + 1} of ${count} (${JSON.stringify(entry)})`;
  throw new ConfigError(`${where} is invalid: ${reason}`);
}

/** The reason part of a ConfigError from setting-parsers.ts (`VAR="x" is invalid: <reason>`). */
function reasonOf(err: ConfigError): string {
  const at = err.message.indexOf(' is invalid: ');
  return at >= 0 ? err.message.slice(at + ' is invalid: '.length) : err.message;
}

/** An entry's host:port, or its refusal through `fail`, which names the entry. */
function entryHostPort(address: string, env: string, fail: (reason: string) => never): HostPort {
  try {
    return hostPort(address, env);
  } catch (err) {
    if (err instanceof ConfigError) fail(reasonOf(err));
    throw err;
  }
}

/**
 * Parses KV_STORE: a discovery entry (`dnssrv+<name>`, `dns+<host>:<port>`), or a list
 * of shards as parseStoreList reads it. Every refusal is a ConfigError naming the
 * variable and the entry.
 */
export function parseStoreSource(raw: string, env: string): StoreSource {
  const entries = raw.split(',').map((e) => e.trim());
  const at = entries.findIndex((e) => DISCOVERY.test(e.slice(e.indexOf('=') + 1).trim()));
  if (at < 0) return parseStoreList(raw, env);
  const entry = entries[at]!;
  const fail = (reason: string): never => refuse(env, entry, at, entries.length, reason);
  if (entries.length > 1) fail('a discovery entry stands alone: DNS lists every shard (write the shards as host:port[,host:port...], or one discovery entry)');
  if (entry.includes('=')) fail('a discovered shard is named by DNS (its SRV target host, or its address): drop the name=');
  const plus = entry.indexOf('+');
  const kind = entry.slice(0, plus).toLowerCase() as StoreDiscovery['kind'];
  const rest = entry.slice(plus + 1).trim();
  if (kind === 'dnssrv') {
    if (rest === '') fail('dnssrv+ needs the SRV name to look up, as in dnssrv+_kv._tcp.store.default.svc.cluster.local');
    if (!DNS_NAME.test(rest)) fail(`dnssrv+ needs a DNS name (letters, digits, "_", "-", dot-separated), not ${JSON.stringify(rest)}`);
    return Object.freeze({ kind, entry, name: rest });
  }
  if (rest === '' || rest.startsWith(':')) fail('dns+ needs a host name and a port, as in dns+store.default.svc.cluster.local:8765');
  if (!/:\d+$/.test(rest)) fail('dns+ needs a port: dns+<host>:<port> (its A/AAAA records give the addresses, not the port)');
  const parsed = entryHostPort(rest, env, fail);
  return Object.freeze({ kind, entry, host: parsed.host, port: parsed.port });
}

/** Parses a store list; every refusal is a ConfigError naming the variable and the entry. */
export function parseStoreList(raw: string, env: string): readonly StoreShard[] {
  const entries = raw.split(',').map((e) => e.trim());
  const count = entries.length;
  const shards: StoreShard[] = [];
  const byName = new Map<string, string>();
  const byAddress = new Map<string, string>();
  const bySeed = new Map<number, string>();

  entries.forEach((entry, i) => {
    const fail = (reason: string): never => refuse(env, entry, i, count, reason);
    if (entry === '') fail(count === 1 ? 'expected host:port[,host:port...]' : 'an empty entry (a stray comma?)');
    const eq = entry.indexOf('=');
    const explicitName = eq >= 0 ? entry.slice(0, eq).trim() : undefined;
    const address = eq >= 0 ? entry.slice(eq + 1).trim() : entry;
    if (DISCOVERY.test(address)) {
      fail('a discovery entry (dnssrv+<name>, dns+<host>:<port>) stands alone, not in a list of shards');
    }
    if (explicitName !== undefined && !NAME.test(explicitName)) {
      fail('a shard name is 1 to 128 letters, digits, ".", "_" or "-", starting with a letter or digit');
    }
    const bracketed = address.startsWith('[');
    const parsed = entryHostPort(address, env, fail);
    const name = explicitName ?? entry;
    const canonical = bracketed ? `[${new URL(`http://${address}`).hostname.slice(1, -1)}]:${parsed.port}` : `${parsed.host.toLowerCase()}:${parsed.port}`;
    const sameAddress = byAddress.get(canonical);
    if (sameAddress !== undefined) fail(`the same address as ${JSON.stringify(sameAddress)}`);
    const sameName = byName.get(name);
    if (sameName !== undefined) fail(`the same shard name as ${JSON.stringify(sameName)}`);
    const seed = memberSeed(name);
    const sameSeed = bySeed.get(seed);
    if (sameSeed !== undefined) fail(`its name hashes like that of ${JSON.stringify(sameSeed)} (they would never share keys); name one of them`);
    byAddress.set(canonical, entry);
    byName.set(name, entry);
    bySeed.set(seed, entry);
    shards.push(Object.freeze({ name, address, host: parsed.host, port: parsed.port }));
  });
  return Object.freeze(shards);
}
