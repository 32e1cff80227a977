import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/index.ts';
import { runKv } from '../services/cli/kv-main.ts';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { parseStoreList } from '../services/config/store-list.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { runKvProcess } from './helpers/kv-process.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { numberedKeys } from './helpers/keys.ts';

// `kv` over a ring of three real stores (SPEC §6): commands on a key go to the key's
// shard, usage/stats/ping ask every shard and print each and the total, the prompt names
// the shard that answered, and one shard down leaves the others usable.

const NAMES = ['s0', 's1', 's2'];
let stores: StoreService[] = [];
let direct: StoreConnection[] = [];
let list: string;

beforeAll(async () => {
  const config = loadStoreConfig({}, { port: 0, metricsPort: 0, logLevel: 'silent' });
  stores = await Promise.all(NAMES.map(() => startStoreService(config, { logger: createLogger({ name: 'kvstore', level: 'silent' }) })));
  direct = stores.map((s) => new StoreConnection({ host: '127.0.0.1', port: s.port }));
  list = stores.map((s, i) => `${NAMES[i]}=127.0.0.1:${s.port}`).join(',');
});

afterAll(() => {
  for (const c of direct) c.destroy();
  for (const s of stores) s.destroy();
});

interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Streams for runKv in this process (a terminal, when `tty`), and what it wrote to them so far. */
function fakeStreams(tty: boolean) {
  const stdin = Object.assign(new PassThrough(), { isTTY: tty });
  const stdout = Object.assign(new PassThrough(), { isTTY: tty, columns: 80 });
  const stderr = new PassThrough();
  const seen = { out: '', err: '' };
  stdout.on('data', (c: Buffer) => (seen.out += c.toString()));
  stderr.on('data', (c: Buffer) => (seen.err += c.toString()));
  return { stdin, stdout, stderr, seen };
}

/** runKv in this process, stdin piped with `input`; for the prompt, a terminal is faked. */
async function kv(args: string[], { env = {}, input = '', tty = false }: { env?: Record<string, string>; input?: string; tty?: boolean } = {}): Promise<Run> {
  const { stdin, stdout, stderr, seen } = fakeStreams(tty);
  stdin.end(input);
  const code = await runKv(args, { stdin, stdout, stderr, env: { KV_STORE: list, KV_HISTORY_FILE: '', ...env } });
  return { code, ...seen };
}

const ring = () => new ShardRing(parseStoreList(list, 'KV_STORE'));
const keys = numberedKeys(30, 'user:');

describe('kv over three shards', () => {
  it('puts each key on the shard the ring names, and nowhere else, and reads it back', async () => {
    for (const key of keys) expect((await kv(['set', key, `v-${key}`])).code).toBe(0);
    const owners = new Set<string>();
    for (const key of keys) {
      const owner = ring().shardFor(key).name;
      owners.add(owner);
      const held = await Promise.all(direct.map((c) => c.get(key)));
      expect(held.map((v, i) => (v === null ? null : NAMES[i])).filter(Boolean), key).toEqual([owner]);
      const got = await kv(['get', key]);
      expect(got).toMatchObject({ code: 0, out: `v-${key}` });
    }
    expect(owners.size).toBe(3); // 30 keys reach every shard
    expect((await kv(['del', keys[0]!])).code).toBe(0);
    expect((await kv(['get', keys[0]!])).code).toBe(1);
  });

  it('usage prints each shard and the total; --json carries both', async () => {
    await kv(['set', 'usage-key', 'x'.repeat(100)]);
    const usages = await Promise.all(direct.map((c) => c.usage()));
    const run = await kv(['usage']);
    expect(run.code).toBe(0);
    expect(run.out.split('\n').filter(Boolean).map((l) => l.split(/\s+/))).toEqual([
      ...NAMES.map((n, i) => [n, String(usages[i])]),
      ['total', String(usages.reduce((a, b) => a + b, 0))],
    ]);
    const json = JSON.parse((await kv(['usage', '--json'])).out);
    expect(json).toEqual({ ok: true, usage: usages.reduce((a, b) => a + b, 0), shards: NAMES.map((n, i) => ({ shard: n, usage: usages[i] })) });
  });

  it('stats prints each shard\'s counters and the summed total', async () => {
    const keyCounts = await Promise.all(direct.map(async (c) => Number((await c.stats()).keys)));
    const run = await kv(['stats']);
    expect(run.code).toBe(0);
    for (const n of NAMES) expect(run.out).toContain(`[${n}]\n`);
    const total = run.out.slice(run.out.indexOf('[total]\n'));
    expect(total).toMatch(new RegExp(`^keys=${keyCounts.reduce((a, b) => a + b, 0)}$`, 'm'));
    expect(total).toMatch(/^eviction_policy=lru$/m);
    expect(total).not.toMatch(/uptime_seconds/);
    const json = JSON.parse((await kv(['stats', '--json'])).out);
    expect(json.stats.keys).toBe(keyCounts.reduce((a, b) => a + b, 0));
    expect(json.shards.map((s: { shard: string }) => s.shard)).toEqual(NAMES);
  });

  it('ping answers for every shard', async () => {
    const run = await kv(['ping']);
    expect(run.code).toBe(0);
    expect(run.out.split('\n').filter(Boolean).map((l) => l.split(/\s+/))).toEqual(NAMES.map((n) => [n, 'PONG']));
  });

  it('the piped prompt sends a key\'s line to its shard and USAGE to every shard', async () => {
    const run = await kv([], { input: 'SET prompt-key hello\nGET prompt-key\nUSAGE\nPING\n' });
    expect(run.code).toBe(0);
    const lines = run.out.split('\n').filter(Boolean);
    expect(lines.slice(0, 2)).toEqual(['OK', 'hello']);
    const usages = await Promise.all(direct.map((c) => c.usage()));
    expect(lines.slice(2, 6).map((l) => l.split(/\s+/))).toEqual([
      ...NAMES.map((n, i) => [n, 'USAGE', String(usages[i])]),
      ['total', 'USAGE', String(usages.reduce((a, b) => a + b, 0))],
    ]);
    expect(lines.slice(6)).toEqual(NAMES.map((n) => `${n.padEnd(7)}PONG`));
    expect(await direct[NAMES.indexOf(ring().shardFor('prompt-key').name)]!.get('prompt-key')).toEqual(Buffer.from('hello'));
  });

  it('the prompt names the shard that answered', async () => {
    // a terminal session: each line typed once the prompt it answers is shown
    const key = keys.slice(1).find((k) => ring().shardFor(k).name === 's2')!;
    const { stdin, stdout, stderr, seen } = fakeStreams(true);
    const done = runKv([], { stdin, stdout, stderr, env: { KV_STORE: list, KV_HISTORY_FILE: '' } });
    const shown = (prompt: string, times = 1) =>
      waitUntil(`prompt ${prompt} x${times}`, async () => (seen.out.split(prompt).length - 1 >= times ? true : undefined), { deadlineMs: 10_000, everyMs: 10 });
    await shown('kv 3 shards> ');
    stdin.write(`GET ${key}\n`);
    await shown('kv s2> ');
    stdin.write('USAGE\n');
    await shown('kv 3 shards> ', 2);
    stdin.end();
    expect(await done).toBe(0);
    expect(seen.err).toContain('connected to 3 of 3 shards (s0, s1, s2)');
    expect(seen.out).toContain(`"v-${key}"`);
  });

  it('refuses a bad list entry, naming the variable and the entry; --store overrides KV_STORE', async () => {
    const bad = await kv(['get', 'k'], { env: { KV_STORE: `${list},s3=nocolon` } });
    expect(bad.code).toBe(2);
    expect(bad.err).toBe('kv: KV_STORE entry 4 of 4 ("s3=nocolon") is invalid: expected host:port, with an IPv6 address in brackets as in [::1]:8765\n');
    const flag = await kv(['--store', `only=127.0.0.1:${stores[1]!.port}`, 'usage'], { env: { KV_STORE: 'nowhere' } });
    expect(flag).toMatchObject({ code: 0, out: `${await direct[1]!.usage()}\n` }); // one store: the plain output
    expect((await kv(['--store', list, '--host', 'x', 'ping'])).err).toMatch(/--store .* cannot be combined with --host/);
    expect((await kv(['--port', '1', 'ping'])).err).toMatch(/--port alone changes one store's address, but KV_STORE lists 3 shards/);
    expect(await kv(['--host', '127.0.0.1', '--port', String(stores[2]!.port), 'usage'])).toMatchObject({ code: 0, out: `${await direct[2]!.usage()}\n` });
    // kv bench over the list drives every shard (it refused a list before the backend took one).
    const bench = await kv(['bench', '-n', '30', '-r', '60', '-c', '3', '--warmup', '0', '--json']);
    expect(bench.code, bench.err).toBe(0);
    expect((JSON.parse(bench.out) as { shards: { shard: string; requests: number }[] }).shards.map((s) => [s.shard, s.requests])).toEqual(list.split(',').map((e) => [e.split('=')[0], 10]));
  });

  it('runs bin/kv.js with a list from the environment, as a user would', async () => {
    const { code, out } = await runKvProcess(['get', keys[5]!], { env: { KV_STORE: list } });
    expect({ code, out }).toEqual({ code: 0, out: `v-${keys[5]}` });
  });

  it('with one shard down: its keys fail, the others answer, usage totals the rest and exits 2', async () => {
    const downIndex = 1;
    const liveKey = keys.slice(1).find((k) => ring().shardFor(k).name !== NAMES[downIndex])!;
    const deadKey = keys.slice(1).find((k) => ring().shardFor(k).name === NAMES[downIndex])!;
    stores[downIndex]!.destroy();
    await waitUntil('s1 refuses connections', async () => ((await kv(['--store', `127.0.0.1:${stores[downIndex]!.port}`, 'ping'])).code === 2 ? true : undefined), { deadlineMs: 10_000, everyMs: 20 });
    expect(await kv(['get', liveKey])).toMatchObject({ code: 0, out: `v-${liveKey}` });
    const dead = await kv(['get', deadKey]);
    expect(dead.code).toBe(2);
    const usage = await kv(['usage']);
    expect(usage.code).toBe(2);
    const live = [0, 2].map((i) => direct[i]!);
    const usages = await Promise.all(live.map((c) => c.usage()));
    expect(usage.out).toMatch(new RegExp(`^total\\s+${usages[0]! + usages[1]!}$`, 'm'));
    expect(usage.out).not.toMatch(/^s1 /m);
    expect(usage.err).toMatch(/^kv: s1: /m);
    expect(usage.err).toContain('the total counts 2 of 3 shards');
    const json = JSON.parse((await kv(['usage', '--json'])).out);
    expect(json.ok).toBe(false);
    expect(json.shards.find((s: { shard: string }) => s.shard === 's1')).toMatchObject({ ok: false, kind: 'unavailable' });
  });
});
