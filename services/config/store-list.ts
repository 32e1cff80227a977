import { memberSeed } from '../ring/shard-ring.ts';
import { ConfigError } from '../shared/config-error.ts';
import { hostPort, type HostPort } from './setting-parsers.ts';

// KV_STORE (backend) and KV_STORE / --store (kv): one store or a ring of shards (SPEC §6).
//   list  := entry ("," entry)*
//   entry := [name "="] address
//   address := host ":" port | "[" IPv6 "]" ":" port
// A shard's name is its identity on the ring and its `shard` metric label; it defaults
// to the entry as written (trimmed). One entry behaves exactly as a plain host:port did.

export interface StoreShard extends HostPort {
  /** The shard's identity: places it on the ring, labels its metrics. */
  readonly name: string;
  /** The address as written (IPv6 in brackets), for messages. */
  readonly address: string;
}

/** Explicit names: letters, digits, `.`, `_`, `-` (a Kubernetes pod name fits; a default name is the entry itself). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const DISCOVERY = /^(dnssrv|dns)\+/i;

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
      fail('DNS discovery (dnssrv+<name>, dns+<host>:<port>) is not supported yet; list the shards as host:port[,host:port...]');
    }
    if (explicitName !== undefined && !NAME.test(explicitName)) {
      fail('a shard name is 1 to 128 letters, digits, ".", "_" or "-", starting with a letter or digit');
    }
    const bracketed = address.startsWith('[');
    let parsed: HostPort;
    try {
      parsed = hostPort(address, env);
    } catch (err) {
      if (err instanceof ConfigError) fail(reasonOf(err));
      throw err;
    }
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
