// The backend over a ring of store shards (SPEC §6): keys spread over three real stores;
// one shard killed, one paused (SIGSTOP, a child process) and one behind a network link
// that goes silent fail only their own keys,
// with 503 and 504 then 503; readiness stays, /healthz says degraded, the metrics move;
// both recover without a restart; membership changed under load fails nothing on the
// shards that stay; an ejected shard's keys go to their next choice and come back.
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/index.ts';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { backendHarness, loggerWithSink, metricSum, scrape, send, statusOf, storeList } from './helpers/backend-harness.ts';
import { freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { CuttableLink } from './helpers/cuttable-link.ts';
import { call, type Outcome } from './helpers/http-call.ts';
import { killLeftovers } from './helpers/leftover-processes.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { numberedKeys } from './helpers/keys.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

const h = backendHarness();
const children: ServiceProcess[] = [];
afterEach(() => killLeftovers(children.splice(0)));

async function storeProcess(port: number): Promise<ServiceProcess> {
  const p = await startServiceProcess(storeScript, { STORE_PORT: String(port), STORE_METRICS_PORT: '0', STORE_HOST: '127.0.0.1' }, STORE_READY);
  children.push(p);
  return p;
}

/** Keys and the shard (by its name in `list`) each belongs to. */
function keysByShard(list: string, count: number): Map<string, string[]> {
  const ring = new ShardRing(storeList(list));
  const by = new Map<string, string[]>(ring.members.map((m) => [m.name, []]));
  for (const key of numberedKeys(count)) by.get(ring.shardFor(key).name)!.push(key);
  return by;
}

async function health(port: number): Promise<{ status: number; body: { status: string; usage: number; shards: { name: string; up: boolean; state: string; usage?: number }[] } }> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  return { status: res.status, body: (await res.json()) as never };
}


describe('the backend over three shards', () => {
  it('spreads keys over the shards, each key on the shard the ring names, and reads them back', async () => {
    const stores = [await h.store(), await h.store(), await h.store()];
    const list = stores.map((s) => `127.0.0.1:${s.port}`).join(',');
    const backend = await h.backend(list);
    const byShard = keysByShard(list, 300);
    for (let i = 0; i < 300; i++) expect((await send(backend.port, 'PUT', `/key-${i}`, `v${i}`)).status).toBe(204);
    for (const [i, store] of stores.entries()) {
      const direct = h.conn(store.port);
      const mine = byShard.get(`127.0.0.1:${store.port}`)!;
      expect(mine.length, `shard ${i}`).toBeGreaterThan(60); // 100 expected; far from 0
      for (const key of mine) expect((await direct.get(key))?.toString()).toBe(key.replace('key-', 'v'));
      expect(Number((await direct.stats()).keys)).toBe(mine.length);
    }
    for (let i = 0; i < 300; i += 7) expect((await send(backend.port, 'GET', `/key-${i}`)).text).toBe(`v${i}`);

    const text = await scrape(backend.metricsPort);
    for (const [name, keys] of byShard) expect(metricSum(text, 'kvbackend_store_commands_total', `command="SET",result="ok",shard="${name}"`)).toBe(keys.length);
    expect(metricSum(text, 'kvbackend_store_pool_connections', 'state="connected"')).toBe(12);
    expect(metricSum(text, 'kvbackend_store_shards', 'state="up"')).toBe(3);
    const report = await health(backend.metricsPort);
    expect(report.status).toBe(200);
    expect(report.body.status).toBe('ok');
    expect(report.body.shards.map((s) => s.name).sort()).toEqual([...byShard.keys()].sort());
    expect(report.body.usage).toBe(report.body.shards.reduce((sum, s) => sum + s.usage!, 0));
    expect(report.body.usage).toBeGreaterThan(0);
  });

  it('one shard killed and one paused: only their keys fail (503; 504 then 503), readiness stays, /healthz is degraded, the metrics move, both recover', { timeout: 60_000 }, async () => {
    const { logger, sink } = loggerWithSink();
    const healthy = await h.store();
    const killedPort = await freePort();
    let killed = await h.store({ port: killedPort });
    const pausedPort = await freePort();
    const paused = await storeProcess(pausedPort);
    const names = { healthy: `127.0.0.1:${healthy.port}`, killed: `127.0.0.1:${killedPort}`, paused: `127.0.0.1:${pausedPort}` };
    const list = [names.healthy, names.killed, names.paused].join(',');
    const backend = await h.backend(list, { storeTimeoutMs: 300, storePoolSize: 2 }, { logger, monitorIntervalMs: 50 });
    await waitUntil('every pool connected', async () => (backend.ring.stateCounts().connected === 6 ? true : undefined), { everyMs: 10 });
    const byShard = keysByShard(list, 120);
    for (let i = 0; i < 120; i++) expect((await send(backend.port, 'PUT', `/key-${i}`, `v${i}`)).status).toBe(204);

    await killed.destroy();
    process.kill(paused.pid, 'SIGSTOP');

    // Every key of each shard, read in parallel: the paused shard's first reads time out (504), the rest fail fast.
    const read = async (keys: string[]) => Promise.all(keys.map(async (k) => (await send(backend.port, 'GET', `/${k}`)).status));
    const healthyStatuses = await read(byShard.get(names.healthy)!);
    expect(new Set(healthyStatuses)).toEqual(new Set([200]));
    expect(new Set(await read(byShard.get(names.killed)!))).toEqual(new Set([503]));
    const pausedFirst = await read(byShard.get(names.paused)!);
    expect(new Set(pausedFirst).has(504), `paused shard, first reads: ${pausedFirst}`).toBe(true);
    for (const s of pausedFirst) expect([503, 504]).toContain(s);
    // While it stays silent: fast 503, never another time-out.
    expect(new Set(await read(byShard.get(names.paused)!))).toEqual(new Set([503]));
    expect(new Set(await read(byShard.get(names.healthy)!))).toEqual(new Set([200]));

    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    const report = await health(backend.metricsPort);
    expect(report.status).toBe(200);
    expect(report.body.status).toBe('degraded');
    const byName = new Map(report.body.shards.map((s) => [s.name, s]));
    expect(byName.get(names.healthy)).toMatchObject({ up: true, state: 'up' });
    expect(byName.get(names.killed)).toMatchObject({ up: false, state: 'down' });
    expect(byName.get(names.paused)).toMatchObject({ up: false, state: 'down' });
    expect(report.body.usage).toBe(byName.get(names.healthy)!.usage);

    await waitUntil('the monitor saw both shards down', async () => {
      const text = await scrape(backend.metricsPort);
      return metricSum(text, 'kvbackend_store_up', `shard="${names.killed}"`) === 0 && metricSum(text, 'kvbackend_store_up', `shard="${names.paused}"`) === 0 ? text : undefined;
    }, { everyMs: 20, deadlineMs: 10_000 });
    const text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_up', `shard="${names.healthy}"`)).toBe(1);
    expect(metricSum(text, 'kvbackend_store_shards', 'state="up"')).toBe(1);
    expect(metricSum(text, 'kvbackend_store_shards', 'state="down"')).toBe(2);
    expect(metricSum(text, 'kvbackend_store_errors_total', `kind="unavailable",shard="${names.killed}"`)).toBeGreaterThan(0);
    expect(metricSum(text, 'kvbackend_store_errors_total', `kind="timeout",shard="${names.paused}"`)).toBeGreaterThan(0);
    expect(metricSum(text, 'kvbackend_store_errors_total', `shard="${names.healthy}"`)).toBe(0);
    expect(metricSum(text, 'kvbackend_store_commands_total', `command="GET",result="error",shard="${names.healthy}"`)).toBe(0);

    // Recovery without a restart: the killed store back on its port (empty), the paused one resumed (with its keys).
    killed = await h.store({ port: killedPort });
    process.kill(paused.pid, 'SIGCONT');
    await waitUntil('both shards answer again', async () => ((await health(backend.metricsPort)).body.status === 'ok' ? true : undefined), { everyMs: 20, deadlineMs: 20_000 });
    await waitUntil('every pool connected again', async () => (backend.ring.connections.every((c) => c.state === 'connected') ? true : undefined), { everyMs: 10, deadlineMs: 20_000 });
    expect(new Set(await read(byShard.get(names.paused)!))).toEqual(new Set([200]));
    expect(new Set(await read(byShard.get(names.killed)!))).toEqual(new Set([404])); // a restarted store is empty
    expect(new Set(await read(byShard.get(names.healthy)!))).toEqual(new Set([200]));

    // Lost and regained logged once per shard, not per failed request.
    const messages = (msg: string, shard: string) => sink.lines.filter((l) => l.msg === msg && l.shard === shard).length;
    for (const shard of [names.killed, names.paused]) {
      expect(messages('store shard lost', shard), shard).toBe(1);
      expect(messages('store shard regained', shard), shard).toBe(1);
    }
    expect(messages('store shard lost', names.healthy)).toBe(0);
  });

  it('a shard behind a network link that goes silent: 504 within STORE_TIMEOUT_MS, then fast 503, only for its keys; it recovers when the link does', { timeout: 60_000 }, async () => {
    const healthy = await h.store();
    const far = await h.store();
    const link = await CuttableLink.to(far.port);
    try {
      const names = { healthy: `127.0.0.1:${healthy.port}`, far: `127.0.0.1:${link.port}` };
      const list = `${names.healthy},${names.far}`;
      const backend = await h.backend(list, { storeTimeoutMs: 300, storePoolSize: 2 }, { monitorIntervalMs: 50 });
      await waitUntil('every pool connected', async () => (backend.ring.stateCounts().connected === 4 ? true : undefined), { everyMs: 10 });
      const byShard = keysByShard(list, 80);
      for (let i = 0; i < 80; i++) expect((await send(backend.port, 'PUT', `/key-${i}`, `v${i}`)).status).toBe(204);

      link.cut();
      const read = async (keys: string[]) => Promise.all(keys.map(async (k) => (await send(backend.port, 'GET', `/${k}`)).status));
      const first = await read(byShard.get(names.far)!);
      expect(new Set(first).has(504), `first reads behind the cut link: ${first}`).toBe(true);
      for (const st of first) expect([503, 504]).toContain(st);
      expect(new Set(await read(byShard.get(names.far)!))).toEqual(new Set([503]));
      expect(new Set(await read(byShard.get(names.healthy)!))).toEqual(new Set([200]));
      expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
      expect((await health(backend.metricsPort)).body.status).toBe('degraded');

      link.restore();
      await waitUntil('the shard answers again', async () => ((await health(backend.metricsPort)).body.status === 'ok' ? true : undefined), { everyMs: 20, deadlineMs: 20_000 });
      await waitUntil('its keys are served again', async () => (new Set(await read(byShard.get(names.far)!)).size === 1 ? true : undefined), { everyMs: 20, deadlineMs: 20_000 });
      expect(new Set(await read(byShard.get(names.far)!))).toEqual(new Set([200]));
    } finally {
      link.destroy();
    }
  });

  it('a ready answer is never followed by a 503: readiness waits for the pool, not a probe connection', async () => {
    const port = await freePort();
    const backend = await h.backend(port, { storePoolSize: 2 });
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(503);
    expect((await send(backend.port, 'GET', '/k')).status).toBe(503); // the pool backs off now
    await h.store({ port });
    await waitUntil('ready', async () => ((await statusOf(backend.metricsPort, '/readyz')) === 200 ? true : undefined), { everyMs: 5, deadlineMs: 20_000 });
    // Right after the ready answer, every request is served.
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => send(backend.port, 'GET', `/k${i}`).then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([404]));
  });

  it('membership changed under load: a shard added and one removed, no request fails, keys that stay on their shard keep their values', { timeout: 60_000 }, async () => {
    const stores = [await h.store(), await h.store(), await h.store()];
    const [a, b, c] = stores.map((s) => `127.0.0.1:${s.port}`) as [string, string, string];
    const backend = await h.backend(`${a},${b}`, { storePoolSize: 2 });
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    h.defer(() => agent.destroy());
    const keys = numberedKeys(200, 'm-');
    for (const k of keys) expect((await send(backend.port, 'PUT', `/${k}`, k)).status).toBe(204);

    const rings = [new ShardRing(storeList(`${a},${b}`)), new ShardRing(storeList(`${a},${b},${c}`)), new ShardRing(storeList(`${a},${c}`))];
    // Keys on `a` in every membership: unaffected by the changes.
    const steady = keys.filter((k) => rings.every((r) => r.shardFor(k).name === a));
    expect(steady.length).toBeGreaterThan(20);

    const outcomes = new Map<Outcome, number>();
    const steadyReads: string[] = [];
    let stop = false;
    let requests = 0;
    const worker = async (w: number): Promise<void> => {
      for (let n = 0; !stop && n < 5000; n++) {
        const key = n % 2 === 0 ? steady[(w * 31 + n) % steady.length]! : keys[(w * 17 + n) % keys.length]!;
        const r = await call(agent, backend.port, 'GET', `/${key}`);
        requests++;
        outcomes.set(r.outcome, (outcomes.get(r.outcome) ?? 0) + 1);
        if (steady.includes(key) && r.body !== key) steadyReads.push(`${key}: ${r.outcome} ${r.body}`);
      }
    };
    const running = Array.from({ length: 8 }, (_, w) => worker(w));
    const changesBefore = metricSum(await scrape(backend.metricsPort), 'kvbackend_store_ring_changes_total');
    await waitUntil('load under way', async () => (requests > 200 ? true : undefined), { everyMs: 5 });
    backend.setShards(storeList(`${a},${b},${c}`));
    const afterJoin = requests;
    await waitUntil('load after the join', async () => (requests > afterJoin + 200 ? true : undefined), { everyMs: 5 });
    backend.setShards(storeList(`${a},${c}`));
    const afterLeave = requests;
    await waitUntil('load after the leave', async () => (requests > afterLeave + 200 ? true : undefined), { everyMs: 5 });
    stop = true;
    await Promise.all(running);

    // Moved keys are misses (nothing is copied between shards); nothing fails.
    for (const kind of outcomes.keys()) expect([200, 404], JSON.stringify(Object.fromEntries(outcomes))).toContain(kind);
    expect(steadyReads).toEqual([]);
    const text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_ring_changes_total') - changesBefore).toBe(2);
    expect(metricSum(text, 'kvbackend_store_shards')).toBe(2);
    expect(backend.ring.shards.map((s) => s.name).sort()).toEqual([a, c].sort());
    // The removed shard's pool closed once its commands were answered.
    await waitUntil('the removed pool closed', async () => (stores[1]!.server.connectionCount === 0 ? true : undefined), { everyMs: 10 });
    // A key that moved to the new shard is written there.
    const moved = keys.find((k) => rings[2]!.shardFor(k).name === c)!;
    expect((await send(backend.port, 'PUT', `/${moved}`, 'new')).status).toBe(204);
    expect((await h.conn(stores[2]!.port).get(moved))?.toString()).toBe('new');
  });

  it('SHARD_EJECT_AFTER: a failing shard leaves the ring, its keys go to their next choice, and it returns after SHARD_RETRY_MS', { timeout: 60_000 }, async () => {
    const { logger, sink } = loggerWithSink();
    const live = await h.store();
    const downPort = await freePort();
    const down = await h.store({ port: downPort });
    const list = `one=127.0.0.1:${live.port},two=127.0.0.1:${downPort}`;
    const backend = await h.backend(list, { shardEjectAfter: 3, shardRetryMs: 300, storePoolSize: 1 }, { logger });
    const ring = new ShardRing(storeList(list));
    const key = numberedKeys(100, 'e-').find((k) => ring.shardFor(k).name === 'two')!;
    expect((await send(backend.port, 'PUT', `/${key}`, 'on-two')).status).toBe(204);
    await down.destroy();

    // Three consecutive failures, then the key is served by its next choice (a miss there, then writable).
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(backend.port, 'GET', `/${key}`)).status);
    expect(statuses).toEqual([503, 503, 503]);
    expect(backend.ring.membership.isEjected('two')).toBe(true);
    expect((await send(backend.port, 'GET', `/${key}`)).status).toBe(404);
    expect((await send(backend.port, 'PUT', `/${key}`, 'on-one')).status).toBe(204);
    expect((await h.conn(live.port).get(key))?.toString()).toBe('on-one');
    let text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_shards', 'state="ejected"')).toBe(1);
    expect(metricSum(text, 'kvbackend_store_ring_changes_total')).toBe(1);
    expect((await health(backend.metricsPort)).body.shards.find((s) => s.name === 'two')).toMatchObject({ state: 'ejected' });
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);

    // Back on its port (empty); readmitted after SHARD_RETRY_MS, the key is read from it again.
    await h.store({ port: downPort });
    await waitUntil('readmitted', async () => (metricSum(await scrape(backend.metricsPort), 'kvbackend_store_ring_changes_total') === 2 ? true : undefined), { everyMs: 20, deadlineMs: 20_000 });
    expect(backend.ring.membership.isEjected('two')).toBe(false);
    await waitUntil('its pool reconnected', async () => (backend.ring.shards.find((s) => s.name === 'two')!.pool.up ? true : undefined), { everyMs: 10, deadlineMs: 20_000 });
    expect((await send(backend.port, 'GET', `/${key}`)).status).toBe(404); // a restarted store is empty: the value written meanwhile is on `one`
    text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_shards', 'state="ejected"')).toBe(0);
    expect(sink.lines.filter((l) => l.msg === 'store shard ejected' && l.shard === 'two')).toHaveLength(1);
    expect(sink.lines.filter((l) => l.msg === 'store shard readmitted' && l.shard === 'two')).toHaveLength(1);
  });

  it('with one store, the shard label is the store as written and the ring never changes', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port);
    expect((await send(backend.port, 'PUT', '/k', 'v')).status).toBe(204);
    const text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_commands_total', `command="SET",result="ok",shard="127.0.0.1:${store.port}"`)).toBe(1);
    expect(metricSum(text, 'kvbackend_store_ring_changes_total')).toBe(0);
    const direct = new StoreConnection({ host: '127.0.0.1', port: store.port, reconnect: false });
    h.defer(() => direct.destroy());
    expect((await direct.get('k'))?.toString()).toBe('v');
  });
});
