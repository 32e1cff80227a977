// `kv` takes the backend's discovery addresses (SPEC §6): the shards an SRV or A/AAAA
// lookup names, reached through the same DNS server; a lookup that fails or finds
// nothing exits 2 naming the address; a malformed entry is refused by name.
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/store-connection.ts';
import { runKv } from '../services/cli/kv-main.ts';
import { loadStoreConfig } from '../services/config/config.ts';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { createLogger } from '../services/shared/logger.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { startTestDnsServer, type TestDnsServer } from './helpers/dns-server.ts';
import { numberedKeys } from './helpers/keys.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SRV = '_kv._tcp.store.test';
const pod = (i: number) => `store-${i}.store.test`;

async function store(host = '127.0.0.1', port = 0): Promise<StoreService> {
  const config = loadStoreConfig({}, { host, port, metricsPort: 0, logLevel: 'silent', warmupKeys: 0 });
  const s = await startStoreService(config, { logger: createLogger({ name: 'kvstore', level: 'silent' }) });
  cleanups.push(() => s.destroy());
  return s;
}

async function dns(): Promise<TestDnsServer> {
  const server = await startTestDnsServer();
  cleanups.push(() => server.close());
  return server;
}

async function kv(args: string[], env: Record<string, string>, input = ''): Promise<{ code: number; out: string; err: string }> {
  const stdin = Object.assign(new PassThrough(), { isTTY: false });
  const stdout = Object.assign(new PassThrough(), { isTTY: false });
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  stdin.end(input);
  const code = await runKv(args, { stdin, stdout, stderr, env: { KV_HISTORY_FILE: '', ...env } });
  return { code, out, err };
}

async function valueAt(host: string, port: number, key: string): Promise<string | undefined> {
  const conn = new StoreConnection({ host, port, reconnect: false });
  try {
    return (await conn.get(key))?.toString();
  } finally {
    conn.destroy();
  }
}

describe('kv with DNS discovery', () => {
  it('dnssrv+: a key goes to its shard, named by its target host and reached through the same DNS server; usage asks every shard', async () => {
    const server = await dns();
    const a = await store('127.0.0.1');
    const b = await store('127.0.0.2');
    server.records.set(SRV, { srv: [{ target: pod(0), port: a.port }, { target: pod(1), port: b.port }] });
    server.records.set(pod(0), { a: ['127.0.0.1'] });
    server.records.set(pod(1), { a: ['127.0.0.2'] }); // only this server knows the names
    const env = { KV_STORE: `dnssrv+${SRV}`, KV_STORE_DNS_SERVER: server.address };
    const ring = new ShardRing([{ name: pod(0) }, { name: pod(1) }]);
    const keys = numberedKeys(10, 'kvd-');
    for (const k of keys) expect((await kv(['set', k, k], env)).code).toBe(0);
    for (const k of keys) {
      const onB = ring.shardFor(k).name === pod(1);
      expect(await valueAt(onB ? '127.0.0.2' : '127.0.0.1', onB ? b.port : a.port, k)).toBe(k);
      expect((await kv(['get', k], env)).out).toBe(k);
    }
    const usage = await kv(['usage'], env);
    expect(usage.code).toBe(0);
    expect(usage.out).toContain(pod(0));
    expect(usage.out).toContain(pod(1));
    expect(usage.out).toMatch(/total/);
    // The prompt too.
    const prompt = await kv(['--store', `dnssrv+${SRV}`], { KV_STORE_DNS_SERVER: server.address }, `set ${keys[0]} again\nget ${keys[0]}\n`);
    expect(prompt.code).toBe(0);
    expect(prompt.out.split('\n')[1]).toContain('again');
    expect(await valueAt(ring.shardFor(keys[0]!).name === pod(1) ? '127.0.0.2' : '127.0.0.1', ring.shardFor(keys[0]!).name === pod(1) ? b.port : a.port, keys[0]!)).toBe('again');
  });

  it('dns+: one shard per address', async () => {
    const server = await dns();
    const a = await store('127.0.0.1');
    const b = await store('127.0.0.2', a.port);
    server.records.set('store.test', { a: ['127.0.0.1', '127.0.0.2'] });
    const ping = await kv(['ping'], { KV_STORE: `dns+store.test:${a.port}`, KV_STORE_DNS_SERVER: server.address });
    expect(ping.code).toBe(0);
    expect(ping.out).toContain(`127.0.0.1:${a.port}`);
    expect(ping.out).toContain(`127.0.0.2:${b.port}`);
  });

  it('a lookup that finds nothing or times out exits 2 naming the address; a malformed entry is refused by name', async () => {
    const server = await dns();
    server.records.set(SRV, {});
    const env = { KV_STORE: `dnssrv+${SRV}`, KV_STORE_DNS_SERVER: server.address };
    const empty = await kv(['get', 'k'], env);
    expect(empty.code).toBe(2);
    expect(empty.err).toMatch(new RegExp(`^kv: KV_STORE=dnssrv\\+${SRV.replace(/\./g, '\\.')}: no store shard found in DNS \\(SRV ${SRV.replace(/\./g, '\\.')}: no records`));
    const repl = await kv([], env, 'ping\n');
    expect(repl.code).toBe(2);
    expect(repl.err).toContain(`KV_STORE=dnssrv+${SRV}: no store shard found in DNS`);
    server.mode = 'silent';
    const silent = await kv(['get', 'k', '--store', 'dns+store.test:1'], { KV_STORE_DNS_SERVER: server.address });
    expect(silent.code).toBe(2);
    expect(silent.err).toMatch(/^kv: --store=dns\+store\.test:1: no store address found in DNS \(dns\+store\.test:1: the DNS server did not answer/);
    const malformed = await kv(['get', 'k'], { KV_STORE: 'dns+store.test' });
    expect(malformed.code).toBe(2);
    expect(malformed.err).toBe('kv: KV_STORE="dns+store.test" is invalid: dns+ needs a port: dns+<host>:<port> (its A/AAAA records give the addresses, not the port)\n');
    expect((await kv(['get', 'k', '--port', '1'], env)).err).toMatch(/--port alone changes one store's address, but KV_STORE is DNS discovery/);
    expect((await kv(['get', 'k'], { ...env, KV_STORE_DNS_SERVER: 'nowhere' })).err).toMatch(/^kv: KV_STORE_DNS_SERVER="nowhere" is invalid/);
  });
});
