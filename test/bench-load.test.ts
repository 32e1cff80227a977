import { afterEach, describe, expect, it } from 'vitest';
import { loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { startFakeStore } from './helpers/fake-store.ts';
import { freePort } from '../services/shared/free-port.ts';
import { runKvProcess, type KvRun } from './helpers/kv-process.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startStore(): Promise<StoreService> {
  const config = loadStoreConfig({}, { port: 0, metricsPort: 0, logLevel: 'silent' });
  const store = await startStoreService(config, { logger: createLogger({ name: 'kvstore', level: 'silent' }) });
  cleanups.push(() => store.destroy());
  return store;
}

/** `kv bench` against one store, the environment's store set to one that refuses (the flags must win). */
function kvBench(port: number, args: string[]): Promise<KvRun> {
  return runKvProcess(['bench', '--port', String(port), '--warmup', '0', ...args], { env: { KV_STORE: '127.0.0.1:1' } });
}

/** kvstore_commands_total summed over every label set, from the store's /metrics. */
async function commandsCounted(store: StoreService): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${store.metricsPort}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^kvstore_commands_total\{[^}]*\} (\d+)$/.exec(line);
    if (m) sum += Number(m[1]);
  }
  return sum;
}

describe('kv bench against a real store', () => {
  it('counts exactly the requests the store counted (prefill, then -n 2000)', async () => {
    const store = await startStore();
    const r = await kvBench(store.port, ['-n', '2000', '-c', '4', '-P', '8', '-r', '300', '--value-size', '50', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.out);
    expect(result).toMatchObject({ ok: true, requests: 2000, errors: 0, wrongReplies: 0, misses: 0, prefill: { requests: 300 }, warmup: null });
    expect(result.gets + result.sets).toBe(2000);
    expect(result.gets).toBeGreaterThan(result.sets); // 9:1
    expect(result.latencyMs.count).toBe(2000);
    expect(await commandsCounted(store)).toBe(result.requests + result.prefill.requests);
  });

  it('without prefill, GETs may miss and every request still matches the store count', async () => {
    const store = await startStore();
    const r = await kvBench(store.port, ['-n', '2000', '-c', '3', '-P', '5', '-r', '1000000', '--no-prefill', '--ratio', '1:1', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.out);
    expect(result).toMatchObject({ requests: 2000, prefill: null, errors: 0, wrongReplies: 0 });
    expect(result.misses).toBeGreaterThan(0);
    expect(await commandsCounted(store)).toBe(2000);
  });

  it('with worker threads the counts still add up', async () => {
    const store = await startStore();
    const r = await kvBench(store.port, ['-n', '2000', '-c', '4', '-P', '4', '-r', '200', '--threads', '2', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.out);
    expect(result).toMatchObject({ requests: 2000, threads: 2, errors: 0, wrongReplies: 0 });
    expect(result.latencyMs.count).toBe(2000);
    expect(await commandsCounted(store)).toBe(2000 + 200);
  });

  it('-n 0 only fills the keyspace', async () => {
    const store = await startStore();
    const r = await kvBench(store.port, ['-n', '0', '-r', '1234', '-c', '2', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ requests: 0, prefill: { requests: 1234 } });
    expect(await commandsCounted(store)).toBe(1234);
  });

  it('prints a readable report', async () => {
    const store = await startStore();
    const r = await kvBench(store.port, ['-n', '500', '-c', '2', '-r', '100']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.out).toMatch(/^requests  500 \(/m);
    expect(r.out).toMatch(/^rate      [\d,]+ ops\/s$/m);
    expect(r.out).toMatch(/^latency   p50 [\d.]+  p90 [\d.]+  p99 [\d.]+  p99\.9 [\d.]+  max [\d.]+ ms$/m);
    expect(r.out).toMatch(/^replies   all correct$/m);
    expect(r.stderr).toBe(''); // no progress bar when stderr is not a terminal
  });
});

describe('kv bench catches a wrong server', () => {
  it('counts GET replies of the wrong size and ERROR replies, exit 2', async () => {
    const fake = await startFakeStore((line) => (line.startsWith('SET') ? (line.includes('000000000003') ? 'ERROR out of memory' : 'OK') : 'VALUE eHh4'));
    cleanups.push(() => fake.close());
    const r = await kvBench(fake.port, ['-n', '100', '-c', '1', '-r', '10', '--value-size', '10', '--ratio', '1:0', '--json']);
    expect(r.code).toBe(2);
    const result = JSON.parse(r.out);
    expect(result).toMatchObject({ ok: false, requests: 100, errors: 1, wrongReplies: 100 });
  });

  it('a refused connection exits 2 with the reason', async () => {
    const port = await freePort();
    const r = await kvBench(port, ['-n', '10']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot connect to 127\.0\.0\.1:\d+: ECONNREFUSED/);
  });

  it('a server that stops answering fails the run after --timeout', async () => {
    const fake = await startFakeStore(() => ({ silent: true }));
    cleanups.push(() => fake.close());
    const r = await kvBench(fake.port, ['-n', '10', '-c', '1', '--no-prefill', '--timeout', '200']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no reply .* within 200 ms/);
  });

  it('rejects bad options', async () => {
    for (const args of [['-c', '0'], ['--ratio', '9'], ['--protocol', 'resp'], ['-n', '5', '-d', '1'], ['--frob']]) {
      const r = await kvBench(1, args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^kv: /);
    }
  });
});

describe('kv bench over a list of shards', () => {
  function kvBenchList(list: string, args: string[]): Promise<KvRun> {
    return runKvProcess(['--store', list, 'bench', '--warmup', '0', ...args], { env: { KV_STORE: '127.0.0.1:1' } });
  }

  it('drives every shard with the keys the ring gives it, and reports each shard and the total', async () => {
    const { ShardRing } = await import('../services/ring/shard-ring.ts');
    const { parseStoreList } = await import('../services/config/store-list.ts');
    const { benchKey } = await import('../services/cli/bench/command-encoder.ts');
    const stores = [await startStore(), await startStore(), await startStore()];
    const list = stores.map((s) => `127.0.0.1:${s.port}`).join(',');
    const keyspace = 600;
    const r = await kvBenchList(list, ['-n', '3000', '-r', String(keyspace), '-c', '6', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.out) as { ok: boolean; requests: number; errors: number; wrongReplies: number; shards: { shard: string; requests: number; keyspace: number; connections: number; prefill: { requests: number } }[] };
    expect(result.ok).toBe(true);
    expect(result.requests).toBe(3000);
    expect(result.shards.map((s) => s.shard)).toEqual(list.split(','));
    const ring = new ShardRing(parseStoreList(list, 'KV_STORE'));
    for (const [i, store] of stores.entries()) {
      const mine = result.shards[i]!;
      const owned = Array.from({ length: keyspace }, (_, k) => benchKey(k)).filter((k) => ring.shardFor(k).name === mine.shard).length;
      expect(mine.keyspace).toBe(owned);
      expect(mine.connections).toBe(2);
      expect(mine.requests).toBe(1000);
      // The store saw exactly its prefill and its share of the load, and holds exactly its keys.
      expect(await commandsCounted(store)).toBe(mine.prefill.requests + mine.requests);
      expect(mine.prefill.requests).toBe(owned);
      const { StoreConnection } = await import('../services/client/index.ts');
      const direct = new StoreConnection({ host: '127.0.0.1', port: store.port, reconnect: false });
      cleanups.push(() => direct.destroy());
      expect(Number((await direct.stats()).keys)).toBe(owned);
    }
    const text = (await kvBenchList(list, ['-n', '300', '-r', '60', '-c', '3'])).out;
    for (const name of list.split(',')) expect(text).toMatch(new RegExp(`^  ${name.replace(/\./g, '\\.')}  1 connections .* ops/s`, 'm'));
    expect(text).toMatch(/^total .* ops\/s over the shards/m);
  });

  it('refuses what a list cannot do: worker threads, fewer connections than shards', async () => {
    const r = await kvBenchList('127.0.0.1:1,127.0.0.1:2', ['--threads', '2', '-c', '4']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--threads 2: a list of shards is driven from one thread/);
    const c = await kvBenchList('127.0.0.1:1,127.0.0.1:2,127.0.0.1:3', ['-c', '2']);
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/--connections 2: a list of 3 shards needs at least one connection each/);
  });
});
