import { describe, expect, it } from 'vitest';
import { hostPort } from '../services/config/setting-parsers.ts';
import { isDiscovery, parseStoreList, parseStoreSource } from '../services/config/store-list.ts';
import { ConfigError } from '../services/shared/config-error.ts';

const parse = (raw: string) => parseStoreList(raw, 'KV_STORE');
const source = (raw: string) => parseStoreSource(raw, 'KV_STORE');



/** The ConfigError message for `raw`, failing the test when it parses. */
function refusal(raw: string, env = 'KV_STORE', parse: (raw: string, env: string) => unknown = parseStoreList): string {
  try {
    parse(raw, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`${raw} was accepted`);
}

/** The refusal of parseStoreSource, which reads discovery entries too. */
const sourceRefusal = (raw: string, env = 'KV_STORE'): string => refusal(raw, env, parseStoreSource);

describe('KV_STORE list', () => {
  it('takes one address exactly as a plain host:port, named as written', () => {
    expect(parse('127.0.0.1:8765')).toEqual([{ name: '127.0.0.1:8765', address: '127.0.0.1:8765', host: '127.0.0.1', port: 8765 }]);
    expect(parse('store:8765')[0]).toMatchObject(hostPort('store:8765', 'KV_STORE'));
  });

  it('takes a comma-separated list, in order, spaces around entries ignored', () => {
    expect(parse('a:8765, b:8765 ,c:9000').map((s) => [s.name, s.host, s.port])).toEqual([
      ['a:8765', 'a', 8765],
      ['b:8765', 'b', 8765],
      ['c:9000', 'c', 9000],
    ]);
  });

  it('takes name=host:port, and IPv6 in brackets', () => {
    expect(parse('store-0=10.0.0.1:8765,store-1=[::1]:8765,[fd00::7]:8765')).toEqual([
      { name: 'store-0', address: '10.0.0.1:8765', host: '10.0.0.1', port: 8765 },
      { name: 'store-1', address: '[::1]:8765', host: '::1', port: 8765 },
      { name: '[fd00::7]:8765', address: '[fd00::7]:8765', host: 'fd00::7', port: 8765 },
    ]);
  });

  it('refuses an unbracketed IPv6 address as ambiguous', () => {
    expect(refusal('::1:8765')).toBe('KV_STORE="::1:8765" is invalid: an IPv6 address needs brackets, as in [::1]:8765 (ambiguous: "::1:8765")');
    expect(refusal('a:1,fd00::7:8765')).toMatch(/^KV_STORE entry 2 of 2 \("fd00::7:8765"\) is invalid: an IPv6 address needs brackets/);
    expect(refusal('[nothost]:1')).toMatch(/expected \[IPv6 address\]:port/);
  });

  it('names the variable and the entry in every refusal', () => {
    expect(refusal('a:1,b')).toBe('KV_STORE entry 2 of 2 ("b") is invalid: expected host:port, with an IPv6 address in brackets as in [::1]:8765');
    expect(refusal('a:1,b:99999,c:3')).toBe('KV_STORE entry 2 of 3 ("b:99999") is invalid: expected host:port with a port from 1 to 65535');
    expect(refusal('a:1,,b:2')).toBe('KV_STORE entry 2 of 3 ("") is invalid: an empty entry (a stray comma?)');
    expect(refusal('a:1,')).toMatch(/^KV_STORE entry 2 of 2 \(""\) is invalid/);
    expect(refusal('bad name=a:1')).toMatch(/^KV_STORE="bad name=a:1" is invalid: a shard name is/);
    expect(refusal('=a:1')).toMatch(/a shard name is/);
    expect(refusal('x=')).toMatch(/^KV_STORE="x=" is invalid: expected host:port/);
    expect(refusal('a:0', '--store')).toBe('--store="a:0" is invalid: expected host:port with a port from 1 to 65535');
    expect(refusal('')).toBe('KV_STORE="" is invalid: expected host:port[,host:port...]');
  });

  it('refuses the same address twice (case and IPv6 spelling aside)', () => {
    expect(refusal('a:1,b:2,A:1')).toBe('KV_STORE entry 3 of 3 ("A:1") is invalid: the same address as "a:1"');
    expect(refusal('x=[::1]:1,y=[0:0::1]:1')).toMatch(/entry 2 of 2 .* the same address as "x=\[::1\]:1"/);
    expect(parse('a:1,a:2')).toHaveLength(2);
  });

  it('refuses the same name twice', () => {
    expect(refusal('s=a:1,s=b:1')).toBe('KV_STORE entry 2 of 2 ("s=b:1") is invalid: the same shard name as "s=a:1"');
  });

  it('takes one discovery entry: dnssrv+<name> or dns+<host>:<port>', () => {
    expect(source('dnssrv+_kv._tcp.store.default.svc.cluster.local')).toEqual({ kind: 'dnssrv', entry: 'dnssrv+_kv._tcp.store.default.svc.cluster.local', name: '_kv._tcp.store.default.svc.cluster.local' });
    expect(source(' DNSSRV+_kv._tcp.store. ')).toMatchObject({ kind: 'dnssrv', name: '_kv._tcp.store.' });
    expect(source('dns+store.default.svc:8765')).toEqual({ kind: 'dns', entry: 'dns+store.default.svc:8765', host: 'store.default.svc', port: 8765 });
    expect(source('a:1,b:2')).toEqual(parse('a:1,b:2'));
    expect(isDiscovery(source('dns+store:1'))).toBe(true);
    expect(isDiscovery(source('store:1'))).toBe(false);
  });

  it('refuses a malformed discovery entry, naming KV_STORE and the entry', () => {
    expect(sourceRefusal('dnssrv+')).toBe('KV_STORE="dnssrv+" is invalid: dnssrv+ needs the SRV name to look up, as in dnssrv+_kv._tcp.store.default.svc.cluster.local');
    expect(sourceRefusal('dnssrv+bad name')).toMatch(/^KV_STORE="dnssrv\+bad name" is invalid: dnssrv\+ needs a DNS name/);
    expect(sourceRefusal('dnssrv+a..b')).toMatch(/needs a DNS name/);
    expect(sourceRefusal('dns+store')).toBe('KV_STORE="dns+store" is invalid: dns+ needs a port: dns+<host>:<port> (its A/AAAA records give the addresses, not the port)');
    expect(sourceRefusal('dns+')).toMatch(/^KV_STORE="dns\+" is invalid: dns\+ needs a host name and a port/);
    expect(sourceRefusal('dns+:8765')).toMatch(/dns\+ needs a host name and a port/);
    expect(sourceRefusal('dns+store:0')).toMatch(/^KV_STORE="dns\+store:0" is invalid: expected host:port with a port from 1 to 65535/);
    expect(sourceRefusal('dns+fd00::1:80')).toMatch(/IPv6 address needs brackets/);
    expect(sourceRefusal('s=dnssrv+_kv._tcp.store')).toMatch(/^KV_STORE="s=dnssrv\+_kv\._tcp\.store" is invalid: a discovered shard is named by DNS/);
    expect(sourceRefusal('a:1,dns+store:8765')).toMatch(/^KV_STORE entry 2 of 2 \("dns\+store:8765"\) is invalid: a discovery entry stands alone/);
    expect(sourceRefusal('dns+x', '--store')).toMatch(/^--store="dns\+x" is invalid: dns\+ needs a port/);
  });

  it('a list of shards refuses a discovery entry in it', () => {
    expect(refusal('a:1,dns+store:8765')).toMatch(/^KV_STORE entry 2 of 2 \("dns\+store:8765"\) is invalid: a discovery entry .* stands alone/);
  });

  it('returns frozen shards', () => {
    const list = parse('a:1,b:2');
    expect(Object.isFrozen(list)).toBe(true);
    expect(Object.isFrozen(list[0])).toBe(true);
  });
});
