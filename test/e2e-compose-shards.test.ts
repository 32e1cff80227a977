// The sharded stack as users run it: docker-compose.yml with deploy/compose.shards.yml,
// images built from this repo's Dockerfile, three store shards behind the backend. Keys
// spread over the shards; one shard's container stopped fails only its keys (503), the
// backend stays healthy; started again, its keys are served (from its snapshot) without a
// backend restart.
// Prometheus, Alertmanager and Grafana are left out (the compose-config checks cover the
// scrape configuration). Skips, saying so, when no Docker engine is reachable;
// REQUIRE_DOCKER=1 makes that a failure.
import { fileURLToPath } from 'node:url';
import { DockerComposeEnvironment, Wait, type StartedDockerComposeEnvironment } from 'testcontainers';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { parseStoreList } from '../services/config/store-list.ts';
import { composeFiles, describeDocker, docker, publishedPort } from './helpers/docker-available.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { numberedKeys } from './helpers/keys.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
// As deploy/compose.shards.yml sets it (test/observability-config.test.ts checks the file says so).
const ring = new ShardRing(parseStoreList('store-0=store:8765,store-1=store-1:8765,store-2=store-2:8765', 'KV_STORE'));

await describeDocker(
  'the compose stack with three store shards, in containers',
  () => {
    let environment: StartedDockerComposeEnvironment | undefined;
    const containerId = (service: string) => environment!.getContainer(`${service}-1`).getId();
    let backendPort = 0;
    const http = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${backendPort}${path}`, init);

    beforeAll(async () => {
      environment = await new DockerComposeEnvironment(root, [...composeFiles(), 'deploy/compose.shards.yml'])
        .withBuild()
        .withEnvironment({ PUBLISH_ADDRESS: '127.0.0.1', BACKEND_PORT: '0', STORE_TIMEOUT_MS: '500' })
        .withWaitStrategy('store-1', Wait.forLogMessage(/"msg":"kvstore ready"/))
        .withWaitStrategy('store-1-1', Wait.forLogMessage(/"msg":"kvstore ready"/))
        .withWaitStrategy('store-2-1', Wait.forLogMessage(/"msg":"kvstore ready"/))
        .withWaitStrategy('backend-1', Wait.forHealthCheck())
        .withStartupTimeout(300_000)
        .up(['store', 'store-1', 'store-2', 'backend']);
      backendPort = await publishedPort(containerId('backend'), 8080, 'backend');
    }, 900_000);

    afterAll(async () => {
      await environment?.down({ removeVolumes: true, timeout: 10_000 });
    }, 120_000);

    const keys = numberedKeys(90, 'shard-e2e-');
    const keysOf = (shard: string) => keys.filter((k) => ring.shardFor(k).name === shard);
    const statuses = async (list: string[]) => new Set(await Promise.all(list.map(async (k) => (await http(`/${k}`)).status)));
    const onlyStatus = (set: Set<number>, status: number) => set.size === 1 && set.has(status);

    it('spreads keys over the three shards, each on the shard the ring names', async () => {
      for (const k of keys) expect((await http(`/${k}`, { method: 'PUT', body: k })).status).toBe(204);
      for (const [shard, service] of [['store-0', 'store'], ['store-1', 'store-1'], ['store-2', 'store-2']] as const) {
        expect(keysOf(shard).length, shard).toBeGreaterThan(10);
        // The shard's own count of SETs, read inside its container (the shards are not published).
        const stats = await docker('exec', containerId(service), 'node', '-e',
          "const s=require('net').connect(8765,'127.0.0.1',()=>s.write('STATS\\n'));s.on('data',d=>{process.stdout.write(String(d));s.end()})");
        expect(Number(/keys=(\d+)/.exec(stats)![1]), shard).toBe(keysOf(shard).length);
      }
    });

    it('a shard container stopped: only its keys fail (503), the backend stays healthy; started again, its keys are served without a backend restart', async () => {
      const backendStarted = await docker('inspect', '--format', '{{.State.StartedAt}}', containerId('backend'));
      await docker('stop', '--time', '10', containerId('store-1'));
      await waitUntil('its keys fail', async () => ((await statuses(keysOf('store-1'))).has(200) ? undefined : true), { deadlineMs: 30_000 });
      for (const s of await statuses(keysOf('store-1'))) expect([503, 504]).toContain(s);
      // A stopped container's address answers nothing: while the host still tries to reach
      // it, a connect may outlast STORE_TIMEOUT_MS (504); then connects fail at once (503).
      await waitUntil('its keys refused at once', async () => (onlyStatus(await statuses(keysOf('store-1')), 503) ? true : undefined), { deadlineMs: 30_000 });
      expect(await statuses(keysOf('store-1'))).toEqual(new Set([503]));
      expect(await statuses([...keysOf('store-0'), ...keysOf('store-2')])).toEqual(new Set([200]));
      expect(await docker('inspect', '--format', '{{.State.Health.Status}}', containerId('backend'))).not.toBe('unhealthy');

      await docker('start', containerId('store-1'));
      // Back with its data (the compose file gives each shard a snapshot on its own volume).
      // Until every key is answered: while the container starts, its address may time out
      // (504) or refuse (503) in turn, so no 503 in one round is not yet readiness.
      await waitUntil('its keys answered again', async () => (onlyStatus(await statuses(keysOf('store-1')), 200) ? true : undefined), { deadlineMs: 60_000 });
      expect(await statuses(keysOf('store-1'))).toEqual(new Set([200]));
      for (const k of keysOf('store-1')) expect(await (await http(`/${k}`)).text()).toBe(k);
      for (const k of keysOf('store-1')) expect((await http(`/${k}`, { method: 'PUT', body: 'again' })).status).toBe(204);
      expect(await statuses([...keysOf('store-0'), ...keysOf('store-2')])).toEqual(new Set([200]));
      expect(await docker('inspect', '--format', '{{.State.StartedAt}}', containerId('backend'))).toBe(backendStarted);
      // A container stopped and started, and waits of up to 30, 30 and 60 s: past the suite's default.
    }, 150_000);
  },
  { compose: true },
);
