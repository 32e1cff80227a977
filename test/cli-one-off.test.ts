import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/index.ts';
import { loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { startFakeStore } from './helpers/fake-store.ts';
import { freePort } from '../services/shared/free-port.ts';
import { runKvProcess, type KvRun } from './helpers/kv-process.ts';


/** Runs `node bin/kv.js ...args` against the test store, as a user would. */
function kv(args: string[], { env = {}, input }: { env?: Record<string, string>; input?: string | Buffer } = {}): Promise<KvRun> {
  return runKvProcess(args, { env: { KV_STORE: `127.0.0.1:${store.port}`, ...env }, input });
}

let store: StoreService;
let client: StoreConnection;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  const config = loadStoreConfig({}, { port: 0, metricsPort: 0, logLevel: 'silent', maxValueBytes: 4096 });
  store = await startStoreService(config, { logger: createLogger({ name: 'kvstore', level: 'silent' }) });
  client = new StoreConnection({ host: '127.0.0.1', port: store.port });
});

afterAll(async () => {
  client?.destroy();
  store?.destroy();
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('kv one-off commands against a real store', () => {
  it('ping prints PONG', async () => {
    const r = await kv(['ping']);
    expect(r).toMatchObject({ code: 0, out: 'PONG\n', stderr: '' });
  });

  it('set joins the remaining arguments with single spaces; get prints the bytes with no newline when piped', async () => {
    expect(await kv(['set', 'greeting', 'hello', 'big', 'world'])).toMatchObject({ code: 0, out: 'OK\n' });
    expect((await client.get('greeting'))?.toString()).toBe('hello big world');
    expect(await kv(['get', 'greeting'])).toMatchObject({ code: 0, out: 'hello big world', stderr: '' });
  });

  it('get of an absent key: exit 1, nothing on stdout, the reason on stderr', async () => {
    const r = await kv(['get', 'no-such-key']);
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.stderr).toMatch(/not found/);
  });

  it('setex sets a time to live that ttl reports', async () => {
    expect(await kv(['setex', 'session', '100', 'token', 'x'])).toMatchObject({ code: 0, out: 'OK\n' });
    expect((await client.get('session'))?.toString()).toBe('token x');
    const r = await kv(['ttl', 'session']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\d+\n$/);
    expect(Number(r.out)).toBeGreaterThan(0);
    expect(Number(r.out)).toBeLessThanOrEqual(100);
  });

  it('ttl: -1 without expiry, exit 1 when absent', async () => {
    await client.set('forever', 'v');
    expect(await kv(['ttl', 'forever'])).toMatchObject({ code: 0, out: '-1\n' });
    expect(await kv(['ttl', 'absent-ttl'])).toMatchObject({ code: 1, out: '' });
  });

  it('expire: OK on a key, exit 1 when absent', async () => {
    await client.set('to-expire', 'v');
    expect(await kv(['expire', 'to-expire', '50'])).toMatchObject({ code: 0, out: 'OK\n' });
    expect(await client.ttl('to-expire')).toBeGreaterThan(0);
    expect(await kv(['expire', 'absent-expire', '50'])).toMatchObject({ code: 1, out: '' });
  });

  it('del removes the key and succeeds for an absent one', async () => {
    await client.set('doomed', 'v');
    expect(await kv(['del', 'doomed'])).toMatchObject({ code: 0, out: 'OK\n' });
    expect(await client.get('doomed')).toBeNull();
    expect(await kv(['delete', 'doomed'])).toMatchObject({ code: 0, out: 'OK\n' });
  });

  it('usage prints the bytes held, stats the counters', async () => {
    await client.set('usage-key', '12345');
    const usage = await kv(['usage']);
    expect(usage.code).toBe(0);
    expect(usage.out).toMatch(/^\d+\n$/);
    expect(Number(usage.out)).toBe(await client.usage());
    const stats = await kv(['stats']);
    expect(stats.code).toBe(0);
    expect(stats.out).toMatch(/^keys=\d+$/m);
    expect(stats.out).toMatch(/^usage_bytes=\d+$/m);
  });

  it('a binary value round-trips through `kv set k -` and `kv get k > buffer`', async () => {
    const value = Buffer.alloc(3000);
    for (let i = 0; i < value.length; i++) value[i] = (i * 7 + 3) % 256;
    for (let i = 0; i < value.length; i++) if (value[i] === 0x0a) value[i] = 0x0b; // LF cannot be carried
    value[value.length - 1] = 0xfe;
    expect(await kv(['set', 'blob', '-'], { input: value })).toMatchObject({ code: 0, out: 'OK\n' });
    const r = await kv(['get', 'blob']);
    expect(r.code).toBe(0);
    expect(r.stdout.equals(value)).toBe(true);
    const json = JSON.parse((await kv(['get', 'blob', '--json'])).out);
    expect(json).toEqual({ ok: true, value: value.toString('base64'), encoding: 'base64' });
  });

  it('stdin: one trailing line break is dropped; an LF inside is refused before sending', async () => {
    expect(await kv(['set', 'piped', '-'], { input: 'hello\r\n' })).toMatchObject({ code: 0 });
    expect((await client.get('piped'))?.toString()).toBe('hello');
    const r = await kv(['set', 'piped', '-'], { input: 'two\nlines\n' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/line feed/);
    expect((await client.get('piped'))?.toString()).toBe('hello');
  });

  it('-- lets a value look like an option', async () => {
    expect(await kv(['set', 'dashes', '--', '--json'])).toMatchObject({ code: 0, out: 'OK\n' });
    expect((await client.get('dashes'))?.toString()).toBe('--json');
  });

  it('--json prints one object per reply', async () => {
    await client.set('j', 'v w');
    expect(JSON.parse((await kv(['--json', 'get', 'j'])).out)).toEqual({ ok: true, value: 'v w', encoding: 'utf8' });
    const missing = await kv(['get', 'j-missing', '--json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.out)).toEqual({ ok: false, notFound: true });
    const [set, ttl, usage, stats, ping] = await Promise.all([
      kv(['set', 'j2', 'x', '--json']),
      kv(['ttl', 'j', '--json']),
      kv(['usage', '--json']),
      kv(['stats', '--json']),
      kv(['ping', '--json']),
    ]);
    expect(JSON.parse(set.out)).toEqual({ ok: true });
    expect(JSON.parse(ttl.out)).toEqual({ ok: true, ttl: -1 });
    expect(JSON.parse(usage.out)).toMatchObject({ ok: true, usage: expect.any(Number) });
    expect(JSON.parse(stats.out).stats).toMatchObject({ keys: expect.any(Number) });
    expect(JSON.parse(ping.out)).toEqual({ ok: true, reply: 'PONG' });
  });

  it('an ERROR reply exits 2 with the reason on stderr (and in --json)', async () => {
    const big = 'v'.repeat(4200); // over this store's MAX_VALUE_BYTES of 4096, within its line bound (4608)
    const r = await kv(['set', 'too-big', big]);
    expect(r).toMatchObject({ code: 2, out: '' });
    expect(r.stderr).toMatch(/ERROR value too large/);
    const j = await kv(['--json', 'set', 'too-big', big]);
    expect(j.code).toBe(2);
    expect(JSON.parse(j.out)).toEqual({ ok: false, error: 'value too large', kind: 'reply' });
  });

  it('bad arguments exit 2 with the reason on stderr', async () => {
    const cases = [['get'], ['get', 'a', 'b'], ['set', 'k'], ['frobnicate'], ['--bogus', 'ping'], ['get', 'bad key'], ['setex', 'k', '0', 'v'], ['expire', 'k', 'soon'], ['--timeout', 'x', 'ping']];
    const runs = await Promise.all(cases.map((args) => kv(args)));
    runs.forEach((r, i) => {
      const args = cases[i]!.join(' ');
      expect(r.code, args).toBe(2);
      expect(r.out, args).toBe('');
      expect(r.stderr, args).toMatch(/^kv: \S/);
      expect(r.stderr, args).not.toMatch(/\n\s+at /); // no stack trace
    });
    const json = await kv(['--json', 'get', 'bad key']);
    expect(JSON.parse(json.out)).toMatchObject({ ok: false, kind: 'usage' });
  });

  it('a refused connection exits 2', async () => {
    const r = await kv(['ping'], { env: { KV_STORE: `127.0.0.1:${await freePort()}` } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/ECONNREFUSED/);
    const j = await kv(['ping', '--json'], { env: { KV_STORE: `127.0.0.1:${await freePort()}` } });
    expect(JSON.parse(j.out)).toMatchObject({ ok: false, kind: 'unavailable' });
  });

  it('a store that never answers: exit 2 after --timeout', async () => {
    const silent = await startFakeStore(() => ({ silent: true }));
    cleanups.push(() => silent.close());
    const r = await kv(['--timeout', '200', 'get', 'k'], { env: { KV_STORE: `127.0.0.1:${silent.port}` } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/did not answer within 200 ms/);
    expect(silent.received).toEqual(['GET k']);
  });

  it('--host and --port override KV_STORE; a malformed KV_STORE is an error', async () => {
    const r = await kv(['--host', '127.0.0.1', '--port', String(store.port), 'ping'], { env: { KV_STORE: `127.0.0.1:${await freePort()}` } });
    expect(r).toMatchObject({ code: 0, out: 'PONG\n' });
    const bad = await kv(['ping'], { env: { KV_STORE: 'no-port' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/KV_STORE/);
  });

  it('--help and help <command>', async () => {
    const help = await kv(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/Usage:/);
    for (const c of ['get', 'set', 'setex', 'del', 'ttl', 'expire', 'usage', 'ping', 'stats', 'bench']) expect(help.out).toContain(`  ${c}`);
    expect(await kv(['help', 'setex'])).toMatchObject({ code: 0, out: expect.stringMatching(/^Usage: kv setex <key> <seconds> <value\.\.\.>/) });
    expect(await kv(['get', '--help'])).toMatchObject({ code: 0, out: expect.stringMatching(/^Usage: kv get <key>/) });
    expect((await kv(['help', 'bench'])).out).toMatch(/^Usage: kv bench/);
    expect((await kv(['help', 'nope'])).code).toBe(2);
  });
});
