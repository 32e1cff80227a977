// The backend over shards it finds in DNS (SPEC §6), with real stores and a DNS server of
// the test's own on loopback: not ready until a lookup finds members; members named by
// their SRV target host; a fourth shard added through DNS takes about 1/4 of the keys,
// moves nothing else and never causes a 503 while it starts; a member that leaves DNS
// leaves the ring, one that goes down stays; a pod that comes back at another address is
// reached under its same name; a DNS server that stops answering changes nothing.
import { Agent } from 'node:http';
import { describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/store-connection.ts';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { createLogger } from '../services/shared/logger.ts';
import { backendHarness, logSink, metricSum, scrape, send, statusOf, type StoreService } from './helpers/backend-harness.ts';
import { startTestDnsServer, type TestDnsServer } from './helpers/dns-server.ts';
import { call, type Outcome } from './helpers/http-call.ts';
import { numberedKeys } from './helpers/keys.ts';
import { freePort } from './helpers/service-process.ts';
import { waitUntil } from './helpers/wait-until.ts';

const h = backendHarness();
const SRV = '_kv._tcp.store.test';
const pod = (i: number) => `store-${i}.store.test`;
const FAST = { everyMs: 10, deadlineMs: 20_000 };

async function dns(): Promise<TestDnsServer> {
  const server = await startTestDnsServer();
  h.defer(() => server.close());
  return server;
}

/** Publishes pods 0..n-1 (their ports) in the SRV record, each pod's A record on 127.0.0.1. */
function publish(server: TestDnsServer, ports: readonly number[]): void {
  ports.forEach((port, i) => server.records.set(pod(i), { a: ['127.0.0.1'] }));
  server.records.set(SRV, { srv: ports.map((port, i) => ({ target: pod(i), port })) });
}

async function discoveringBackend(server: TestDnsServer, logs = logSink()) {
  const logger = createLogger({ name: 'kvbackend', level: 'info', destination: logs });
  return h.backend(`dnssrv+${SRV}`, { storeRefreshMs: 50, storeDnsServer: { host: '127.0.0.1', port: server.port }, storePoolSize: 2 }, { logger, discoveryTimeoutMs: 100, monitorIntervalMs: 50 });
}

/** A key's value read straight from a store at host:port. */
async function valueAt(host: string, port: number, key: string): Promise<string | undefined> {
  const conn = new StoreConnection({ host, port, timeoutMs: 2000, reconnect: false });
  try {
    return (await conn.get(key))?.toString();
  } finally {
    conn.destroy();
  }
}

const ringNames = (backend: { ring: { shards: readonly { name: string }[] } }) => backend.ring.shards.map((s) => s.name).sort().join(',');

describe('the backend over shards found in DNS', () => {
  it('starts not ready while the lookup finds nothing, then serves the members it finds, named by their target hosts', async () => {
    const server = await dns();
    const logs = logSink();
    const backend = await discoveringBackend(server, logs);
    await waitUntil('two failed lookups', async () => (metricSum(await scrape(backend.metricsPort), 'kvbackend_store_discovery_failures_total') >= 2 ? true : undefined), FAST);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(503);
    expect((await send(backend.port, 'GET', '/k')).status).toBe(503);
    const healthz = await fetch(`http://127.0.0.1:${backend.metricsPort}/healthz`);
    expect(healthz.status).toBe(503);
    expect(((await healthz.json()) as { error: string }).error).toBe(`no store shard discovered yet (KV_STORE=dnssrv+${SRV})`);
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_store_discovery_last_success_timestamp_seconds')).toBe(0);

    const stores = [await h.store(), await h.store()];
    publish(server, stores.map((s) => s.port));
    await waitUntil('ready', async () => ((await statusOf(backend.metricsPort, '/readyz')) === 200 ? true : undefined), FAST);
    expect(ringNames(backend)).toBe(`${pod(0)},${pod(1)}`);
    expect((await send(backend.port, 'PUT', '/k', 'v')).status).toBe(204);
    expect((await send(backend.port, 'GET', '/k')).text).toBe('v');
    const text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_commands_total', `command="SET",result="ok",shard="${backend.ring.shardFor('k')!.name}"`)).toBe(1);
    expect(metricSum(text, 'kvbackend_store_discovery_last_success_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 60);

    // The run of failures is logged once, the recovery once, the members once.
    expect(logs.lines.filter((l) => l.msg === 'store discovery failed; keeping the last members')).toHaveLength(1);
    expect(logs.lines.filter((l) => l.msg === 'store discovery recovered')).toHaveLength(1);
    expect(logs.lines.filter((l) => l.msg === 'store shards discovered')).toHaveLength(1);
  });

  it('a fourth shard added through DNS: no 503 while it starts, about 1/4 of the keys move to it and nothing else moves', { timeout: 90_000 }, async () => {
    const server = await dns();
    const stores = [await h.store(), await h.store(), await h.store()];
    publish(server, stores.map((s) => s.port));
    const backend = await discoveringBackend(server);
    await waitUntil('ready', async () => ((await statusOf(backend.metricsPort, '/readyz')) === 200 ? true : undefined), FAST);
    const keys = numberedKeys(2000, 'scale-');
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    h.defer(() => agent.destroy());
    for (let i = 0; i < keys.length; i += 100) {
      const batch = await Promise.all(keys.slice(i, i + 100).map((k) => call(agent, backend.port, 'PUT', `/${k}`, k)));
      expect(new Set(batch.map((b) => b.outcome))).toEqual(new Set([204]));
    }
    const three = new ShardRing([0, 1, 2].map((i) => ({ name: pod(i) })));
    const four = new ShardRing([0, 1, 2, 3].map((i) => ({ name: pod(i) })));
    const changesBefore = backend.ring.ringChanges;

    // Reads and writes over every key until the fourth shard has joined, and a while after.
    const outcomes = new Map<Outcome, number>();
    let stop = false;
    const load = (async () => {
      for (let round = 0; !stop; round++) {
        const batch = keys.slice((round * 50) % keys.length, ((round * 50) % keys.length) + 50);
        const results = await Promise.all(batch.map((k, j) => (j % 5 === 0 ? call(agent, backend.port, 'PUT', `/${k}`, k) : call(agent, backend.port, 'GET', `/${k}`))));
        for (const r of results) outcomes.set(r.outcome, (outcomes.get(r.outcome) ?? 0) + 1);
      }
    })();

    // The new pod is in DNS before its store listens (a StatefulSet pod still loading).
    const newPort = await freePort();
    publish(server, [...stores.map((s) => s.port), newPort]);
    await waitUntil('the fourth pod is joining', async () => (backend.ring.joining.length === 1 ? true : undefined), FAST);
    const whileStarting = await waitUntil('some load while it starts', async () => ([...outcomes.values()].reduce((a, b) => a + b, 0) > 500 ? true : undefined), FAST);
    expect(whileStarting).toBe(true);
    expect(backend.ring.shards).toHaveLength(3);
    const fourth = await h.store({ port: newPort });
    await waitUntil('four shards on the ring', async () => (backend.ring.shards.length === 4 ? true : undefined), FAST);
    const served = [...outcomes.values()].reduce((a, b) => a + b, 0);
    await waitUntil('some load after it joined', async () => ([...outcomes.values()].reduce((a, b) => a + b, 0) > served + 500 ? true : undefined), FAST);
    stop = true;
    await load;
    expect(outcomes.get(503) ?? 0, JSON.stringify([...outcomes])).toBe(0);
    expect([...outcomes.keys()].every((o) => o === 200 || o === 204 || o === 404), JSON.stringify([...outcomes])).toBe(true);
    expect(backend.ring.ringChanges).toBe(changesBefore + 1); // the join, once

    const moved = keys.filter((k) => three.shardFor(k).name !== four.shardFor(k).name);
    expect(moved.every((k) => four.shardFor(k).name === pod(3))).toBe(true);
    expect(moved.length / keys.length).toBeGreaterThan(0.2);
    expect(moved.length / keys.length).toBeLessThan(0.3);
    // What did not move is served from where it was, with its value; what moved lives on the new shard now.
    const movedSet = new Set(moved);
    const direct = stores.map((s) => h.conn(s.port));
    for (const k of keys.filter((k) => !movedSet.has(k)).slice(0, 300)) {
      expect((await call(agent, backend.port, 'GET', `/${k}`)).body).toBe(k);
      expect((await direct[Number(three.shardFor(k).name.slice(6, 7))]!.get(k))?.toString()).toBe(k);
    }
    const newConn = h.conn(fourth.port);
    for (const k of moved.slice(0, 100)) {
      expect((await call(agent, backend.port, 'PUT', `/${k}`, 'new')).outcome).toBe(204);
      expect((await newConn.get(k))?.toString()).toBe('new');
    }
  });

  it('a member that goes down stays on the ring (503 for its keys only); one that leaves DNS leaves it', async () => {
    const server = await dns();
    const stores: StoreService[] = [await h.store(), await h.store(), await h.store()];
    publish(server, stores.map((s) => s.port));
    const backend = await discoveringBackend(server);
    await waitUntil('every pool connected', async () => (backend.ring.stateCounts().connected === 6 ? true : undefined), FAST);
    const ring = new ShardRing([0, 1, 2].map((i) => ({ name: pod(i) })));
    const keys = numberedKeys(90, 'd-');
    for (const k of keys) expect((await send(backend.port, 'PUT', `/${k}`, k)).status).toBe(204);
    const changes = backend.ring.ringChanges;

    await stores[2]!.destroy();
    await waitUntil('pod 2 is down', async () => (backend.ring.shard(pod(2))!.pool.up ? undefined : true), FAST);
    const polls = server.questions.length;
    await waitUntil('a few more lookups', async () => (server.questions.length > polls + 6 ? true : undefined), FAST);
    expect(ringNames(backend)).toBe([0, 1, 2].map(pod).join(','));
    for (const k of keys) expect((await send(backend.port, 'GET', `/${k}`)).status).toBe(ring.shardFor(k).name === pod(2) ? 503 : 200);
    expect(backend.ring.ringChanges).toBe(changes);

    publish(server, stores.slice(0, 2).map((s) => s.port));
    await waitUntil('pod 2 left the ring', async () => (backend.ring.shards.length === 2 ? true : undefined), FAST);
    for (const k of keys) expect([200, 404]).toContain((await send(backend.port, 'GET', `/${k}`)).status);
    expect(backend.ring.ringChanges).toBe(changes + 1);
    const text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_shards')).toBe(2);
  });

  it('a pod that comes back at another address is reached under its same name, on reconnect and on refresh; the ring does not change', async () => {
    const server = await dns();
    const kept = await h.store();
    const before = await h.store({ host: '127.0.0.1' });
    publish(server, [kept.port, before.port]);
    const backend = await discoveringBackend(server);
    await waitUntil('every pool connected', async () => (backend.ring.stateCounts().connected === 4 ? true : undefined), FAST);
    const ring = new ShardRing([{ name: pod(0) }, { name: pod(1) }]);
    const key = numberedKeys(100, 'ip-').find((k) => ring.shardFor(k).name === pod(1))!;
    const changes = backend.ring.ringChanges;

    // On reconnect: the old process is gone, the new one listens at 127.0.0.2 on the same port.
    await before.destroy();
    const after = await h.store({ host: '127.0.0.2', port: before.port });
    server.records.set(pod(1), { a: ['127.0.0.2'] });
    await waitUntil('served at the new address', async () => ((await send(backend.port, 'PUT', `/${key}`, 'moved')).status === 204 ? true : undefined), FAST);
    expect((await valueAt('127.0.0.2', after.port, key))).toBe('moved');

    // On refresh: the old address still answers (the old pod not yet gone), DNS names a third.
    const third = await h.store({ host: '127.0.0.3', port: before.port });
    server.records.set(pod(1), { a: ['127.0.0.3'] });
    await waitUntil('the refresh moved the pool', async () => {
      await send(backend.port, 'PUT', `/${key}`, 'third');
      return (await valueAt('127.0.0.3', third.port, key)) === 'third' ? true : undefined;
    }, FAST);
    // Every connection of the pool moved: the pod left behind gets nothing more.
    for (let i = 0; i < 10; i++) expect((await send(backend.port, 'PUT', `/${key}`, `final-${i}`)).status).toBe(204);
    expect(await valueAt('127.0.0.3', third.port, key)).toBe('final-9');
    expect(await valueAt('127.0.0.2', after.port, key)).not.toMatch(/^final/);
    expect(backend.ring.ringChanges).toBe(changes);
    expect(ringNames(backend)).toBe(`${pod(0)},${pod(1)}`);
  });

  it('dns+: one shard per A record, named by its address', async () => {
    const server = await dns();
    const a = await h.store({ host: '127.0.0.1' });
    const b = await h.store({ host: '127.0.0.2', port: a.port });
    server.records.set('store.test', { a: ['127.0.0.1', '127.0.0.2'] });
    const backend = await h.backend(`dns+store.test:${a.port}`, { storeRefreshMs: 50, storeDnsServer: { host: '127.0.0.1', port: server.port } }, { discoveryTimeoutMs: 100 });
    await waitUntil('ready', async () => ((await statusOf(backend.metricsPort, '/readyz')) === 200 ? true : undefined), FAST);
    expect(ringNames(backend)).toBe(`127.0.0.1:${a.port},127.0.0.2:${b.port}`);
  });

  it('a DNS server that stops answering: the members stay and serve, each failed lookup counted, the failure logged once', async () => {
    const server = await dns();
    const stores = [await h.store(), await h.store()];
    publish(server, stores.map((s) => s.port));
    const logs = logSink();
    const backend = await discoveringBackend(server, logs);
    await waitUntil('ready', async () => ((await statusOf(backend.metricsPort, '/readyz')) === 200 ? true : undefined), FAST);
    const success = metricSum(await scrape(backend.metricsPort), 'kvbackend_store_discovery_last_success_timestamp_seconds');
    server.mode = 'silent';
    await waitUntil('three failed lookups', async () => (metricSum(await scrape(backend.metricsPort), 'kvbackend_store_discovery_failures_total') >= 3 ? true : undefined), FAST);
    server.records.set(SRV, {}); // then an empty answer
    server.mode = 'answer';
    await waitUntil('five failed lookups', async () => (metricSum(await scrape(backend.metricsPort), 'kvbackend_store_discovery_failures_total') >= 5 ? true : undefined), FAST);
    expect(ringNames(backend)).toBe(`${pod(0)},${pod(1)}`);
    for (const k of numberedKeys(20)) expect((await send(backend.port, 'PUT', `/${k}`, k)).status).toBe(204);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_store_discovery_last_success_timestamp_seconds')).toBe(success);
    const failed = logs.lines.filter((l) => l.msg === 'store discovery failed; keeping the last members');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ reason: 'timeout', members: [pod(0), pod(1)] });
  });
});
