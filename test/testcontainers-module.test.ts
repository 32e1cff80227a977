// kvstack/testcontainers against the images built from this checkout: the store started
// with its defaults and each builder method, its ready client and connection URL, a wait
// strategy of the caller's kept, a snapshot on a volume across containers, TLS with
// client certificates, the backend in front of one store (following it to a new address)
// and of a ring, and `await using`. Skips, saying so, when no Docker engine is reachable;
// REQUIRE_DOCKER=1 makes that a failure.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Network, Wait } from 'testcontainers';
import { beforeAll, expect, it, vi } from 'vitest';
import { parseStoreUrl, StoreAuthError, StoreConnection, StoreError, StoreReplyError, TlsMaterialSource } from '../services/client/index.ts';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { probeUsage } from '../services/client/probe-usage.ts';
import { KvstackBackendContainer, KvstackContainer, STORE_ADMIN_PORT, STORE_PORT, type StartedKvstackContainer } from '../services/testcontainers/index.ts';
import { describeDocker, docker, publishedPort } from './helpers/docker-available.ts';
import { buildKvstackImages } from './helpers/kvstack-images.ts';
import { numberedKeys } from './helpers/keys.ts';
import { pem, tlsFixture } from './helpers/tls-certs.ts';
import { waitUntil } from './helpers/wait-until.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

// Each test starts one to three containers: on a loaded 2-core runner that can pass 30 s.
vi.setConfig({ testTimeout: 120_000 });

/** Whether Docker still knows the container (removed once stopped: testcontainers' default). */
async function exists(id: string): Promise<boolean> {
  try {
    await docker('inspect', '--format', '{{.Id}}', id);
    return true;
  } catch {
    return false;
  }
}

await describeDocker(
  'kvstack/testcontainers: the store and the backend in containers',
  () => {
  beforeAll(async () => {
    await buildKvstackImages();
  }, 900_000);

  it('starts the store with its defaults: a ready client, a connection URL the client reads, the admin URL', async () => {
    await using store = await new KvstackContainer().start();
    const client = await store.client();
    await client.set('greeting', 'hello from a container');
    expect((await client.get('greeting'))?.toString()).toBe('hello from a container');

    const byUrl = new StoreConnection(parseStoreUrl(store.getConnectionUrl()));
    try {
      expect((await byUrl.get('greeting'))?.toString()).toBe('hello from a container');
    } finally {
      byUrl.destroy();
    }
    expect(store.getConnectionUrl()).toBe(`kvstack://${store.getHost()}:${store.getPort()}`);
    const health = await fetch(`${store.getAdminUrl()}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
  });

  it('withMemoryCap and withEvictionPolicy reach the store', async () => {
    await using store = await new KvstackContainer().withMemoryCap(4096).withEvictionPolicy('noeviction').start();
    const client = await store.client();
    expect(await client.stats()).toMatchObject({ max_memory_bytes: '4096' });
    await client.set('a', 'x'.repeat(3000));
    await expect(client.set('b', 'x'.repeat(3000))).rejects.toSatisfy((err) => err instanceof StoreReplyError && err.reason === 'out of memory');
    expect((await client.get('a'))?.length).toBe(3000);
    expect(() => new KvstackContainer().withMemoryCap(0)).toThrow(/withMemoryCap/);
    expect(() => new KvstackContainer().withEvictionPolicy('fifo' as 'lru')).toThrow(/lru or noeviction/);
  });

  it('withPassword: the client and the URL carry it, a client without it is refused, and docker inspect does not show it', async () => {
    const password = `pw ${randomUUID()}`;
    await using store = await new KvstackContainer().withPassword(password).start();
    const client = await store.client();
    await client.set('k', 'v');
    expect(store.getConnectionUrl()).toBe(`kvstack://:${encodeURIComponent(password)}@${store.getHost()}:${store.getPort()}`);
    expect(parseStoreUrl(store.getConnectionUrl()).password?.reveal()).toBe(password);

    const stranger = new StoreConnection({ host: store.getHost(), port: store.getPort(), reconnect: false });
    try {
      await expect(stranger.get('k')).rejects.toBeInstanceOf(StoreAuthError);
    } finally {
      stranger.destroy();
    }
    expect(await docker('inspect', store.getId())).not.toContain(password);
  });

  it('keeps a wait strategy set by the caller instead of its own', async () => {
    // The default (the ready line) would succeed: a wait for a line the store never logs fails.
    const never = new KvstackContainer().withWaitStrategy(Wait.forLogMessage('a line the store never logs')).withStartupTimeout(3000);
    await expect(never.start()).rejects.toThrow(/a line the store never logs|timed out|Log message/i);
    await using store = await new KvstackContainer().withWaitStrategy(Wait.forHttp('/readyz', STORE_ADMIN_PORT)).start();
    await (await store.client()).ping();
  });

  it('withSnapshot on a volume: a second container serves what the first held when it stopped', async () => {
    const volume = `kvstack-tc-${randomUUID()}`;
    try {
      {
        await using first = await new KvstackContainer().withSnapshot(volume).start();
        const client = await first.client();
        await client.set('kept', 'across containers');
        await client.set('ttl-kept', 'v', 3600);
      }
      await using second = await new KvstackContainer().withSnapshot(volume).start();
      const client = await second.client();
      expect((await client.get('kept'))?.toString()).toBe('across containers');
      expect(await client.ttl('ttl-kept')).toBeGreaterThan(3500);
    } finally {
      await docker('volume', 'rm', '-f', volume);
    }
  });

  it('the backend in front of a store with a password, on a network of the caller', async () => {
    await using network = await new Network().start();
    await using store = await new KvstackContainer().withNetwork(network).withPassword('shared secret').start();
    await using backend = await new KvstackBackendContainer().withStore(store).start();
    expect(backend.getNetworkNames()).toContain(network.getName());
    expect((await fetch(`${backend.getHttpUrl()}/through-http`, { method: 'PUT', body: 'value over HTTP' })).status).toBe(204);
    expect(await (await fetch(`${backend.getHttpUrl()}/through-http`)).text()).toBe('value over HTTP');
    expect((await (await store.client()).get('through-http'))?.toString()).toBe('value over HTTP');
    expect((await fetch(`${backend.getAdminUrl()}/readyz`)).status).toBe(200);
  });

  it('the backend follows its store, by alias through Docker DNS, when it is stopped and started again at another address', async () => {
    await using network = await new Network().start();
    await using store = await new KvstackContainer().withNetwork(network).withNetworkAliases('kvstore').start();
    await using backend = await new KvstackBackendContainer().withStore(store).start();
    expect((await fetch(`${backend.getHttpUrl()}/before`, { method: 'PUT', body: 'v' })).status).toBe(204);
    const address = () => docker('inspect', '--format', `{{(index .NetworkSettings.Networks "${network.getName()}").IPAddress}}`, store.getId());
    const before = await address();
    await docker('stop', '--time', '10', store.getId());
    // Another container on the network takes the lowest free address, the store's.
    await using squatter = await new KvstackContainer().withNetwork(network).start();
    await docker('start', store.getId());
    const after = await address();
    expect(after, `the store came back at ${after}, the squatter has ${squatter.getIpAddress(network.getName())}`).not.toBe(before);
    // Docker chose new host ports for the started container.
    const port = await publishedPort(store.getId(), STORE_PORT, 'store');
    await waitUntil('the store to serve again', () => probeUsage({ host: store.getHost(), port, timeoutMs: 1000 }));
    await waitUntil('the backend to reach the store again', async () => ((await fetch(`${backend.getHttpUrl()}/moved`, { method: 'PUT', body: 'to the store' })).status === 204 ? true : undefined));
    // In the store that moved, not in the container now at its old address.
    const client = new StoreConnection({ host: store.getHost(), port, reconnect: false });
    try {
      expect((await client.get('moved'))?.toString()).toBe('to the store');
    } finally {
      client.destroy();
    }
    expect(await (await squatter.client()).get('moved')).toBeNull();
  });

  it('withTls: the store speaks TLS only, with client certificates; the ready client and a backend in front go through', async () => {
    const certs = tlsFixture();
    const storeCert = certs.issue('container-store', { cn: 'kvstore', san: 'DNS:kvstore,DNS:localhost,IP:127.0.0.1' });
    const tls = { cert: pem(storeCert.cert), key: pem(storeCert.key), ca: pem(certs.ca), clientAuth: 'require', client: { cert: pem(certs.client.cert), key: pem(certs.client.key) } } as const;
    await using network = await new Network().start();
    await using store = await new KvstackContainer().withNetwork(network).withNetworkAliases('kvstore').withTls(tls).withPassword('over tls').start();
    const client = await store.client();
    await client.set('secured', 'yes');
    expect((await client.get('secured'))?.toString()).toBe('yes');

    // Plaintext on the TLS port, and TLS without a client certificate, get nothing through.
    for (const options of [{ tls: undefined }, { tls: new TlsMaterialSource(() => ({ ca: tls.ca })) }]) {
      const refused = new StoreConnection({ ...store.getConnectionOptions(), ...options, reconnect: false, timeoutMs: 2000 });
      try {
        await expect(refused.get('secured')).rejects.toBeInstanceOf(StoreError);
      } finally {
        refused.destroy();
      }
    }

    await using backend = await new KvstackBackendContainer().withStore(store).start();
    expect(backend.getNetworkNames()).toContain(network.getName());
    expect(await (await fetch(`${backend.getHttpUrl()}/secured`)).text()).toBe('yes');
    expect(() => new KvstackContainer().withTls({ cert: '/etc/store.crt', key: '/etc/store.key' })).toThrow(/PEM text/);
  });

  it('the backend in front of a ring of two stores: each key on the store the ring names', async () => {
    await using a = await new KvstackContainer().start();
    await using b = await new KvstackContainer().start();
    await using backend = await new KvstackBackendContainer().withStore(a, b).start();
    const ring = new ShardRing([{ name: 'store-0' }, { name: 'store-1' }]);
    const keys = numberedKeys(40, 'ring-');
    for (const k of keys) expect((await fetch(`${backend.getHttpUrl()}/${k}`, { method: 'PUT', body: k })).status).toBe(204);
    const stores: Record<string, StartedKvstackContainer> = { 'store-0': a, 'store-1': b };
    for (const [name, store] of Object.entries(stores)) {
      const mine = keys.filter((k) => ring.shardFor(k).name === name);
      expect(mine.length, name).toBeGreaterThan(5);
      expect(Number((await (await store.client()).stats()).keys), name).toBe(mine.length);
    }
  });

  it("the Testcontainers page's vitest example passes as a user pastes it (imports pointed at this checkout)", async () => {
    const page = await readFile(join(root, 'docs', 'testcontainers.md'), 'utf8');
    const example = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(example).toHaveLength(1);
    // Inside the checkout, so that vitest and testcontainers resolve; a .spec.ts name and a
    // config of its own, so that no run of this project's suites collects it.
    const dir = await mkdtemp(join(root, 'test', '.docs-example-'));
    try {
      const code = example[0]!.replace("'kvstack/client'", JSON.stringify(join(root, 'services/client/index.ts'))).replace("'kvstack/testcontainers'", JSON.stringify(join(root, 'services/testcontainers/index.ts')));
      await writeFile(join(dir, 'kvstack.spec.ts'), code);
      await writeFile(join(dir, 'vitest.config.mjs'), `export default { test: { root: ${JSON.stringify(dir)}, include: ['kvstack.spec.ts'], testTimeout: 120000, hookTimeout: 120000 } };\n`);
      const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
      const r = await promisify(execFile)(process.execPath, [vitest, 'run', '--config', join(dir, 'vitest.config.mjs')], { cwd: dir, env: process.env, timeout: 240_000 }).catch((err: { stdout?: string; stderr?: string }) => err);
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.replace(/\x1b\[[0-9;]*m/g, '');
      expect(out, out).toMatch(/Tests\s+3 passed \(3\)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('await using stops and removes the container and destroys the clients it gave out', async () => {
    let id = '';
    let client: StoreConnection | undefined;
    {
      await using store = await new KvstackContainer().start();
      id = store.getId();
      client = await store.client();
      expect(await exists(id)).toBe(true);
    }
    expect(client.state).toBe('closed');
    expect(await exists(id)).toBe(false);
  });
  },
  { compose: true },
);
