// A rolling restart of discovered shards under load (issue 38; SPEC §6, §7, §9): three
// store processes with snapshots, found by a backend through a DNS server of the test's
// own, which keeps every pod in its SRV record while it restarts (the headless Service
// publishes not-ready addresses). Each shard in turn is SIGTERM'd (it answers what it
// received, writes its snapshot and exits) and started again on its port with the same
// snapshot, while readers and writers run. After each restart every key written before
// it is served with its value; the ring never changes; the only failed requests are the
// restarting shard's keys during its own window (from the signal to its pool being up
// again). The windows and the failures in them are printed.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ShardRing } from '../services/ring/shard-ring.ts';
import { backendHarness, statusOf } from './helpers/backend-harness.ts';
import { startTestDnsServer } from './helpers/dns-server.ts';
import { call, type Outcome } from './helpers/http-call.ts';
import { numberedKeys } from './helpers/keys.ts';
import { freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

const h = backendHarness();

/** A store process, killed after the test if it still runs. */
async function storeProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const p = await startServiceProcess(storeScript, env, STORE_READY);
  h.defer(async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  });
  return p;
}

const SRV = '_kv._tcp.store.test';
const pod = (i: number) => `store-${i}.store.test`;
const FAST = { everyMs: 10, deadlineMs: 60_000 };

interface Request {
  readonly key: string;
  readonly method: 'GET' | 'PUT';
  readonly start: number;
  readonly end: number;
  readonly outcome: Outcome;
}

describe('a rolling restart of discovered shards with snapshots, under load', () => {
  it('keeps every key, never changes the ring, and fails only the restarting shard\'s keys in its window', { timeout: 240_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvstack-rolling-'));
    h.defer(() => rmSync(dir, { recursive: true, force: true }));
    const ports = [await freePort(), await freePort(), await freePort()];
    const envOf = (i: number) => ({
      STORE_HOST: '127.0.0.1',
      STORE_PORT: String(ports[i]),
      STORE_METRICS_PORT: '0',
      STORE_SNAPSHOT_PATH: join(dir, `shard-${i}.snapshot`),
      STORE_WARMUP_KEYS: '0',
    });
    const startStore = (i: number) => storeProcess(envOf(i));
    const stores = [await startStore(0), await startStore(1), await startStore(2)];

    const dns = await startTestDnsServer({ [SRV]: { srv: ports.map((port, i) => ({ target: pod(i), port })) } });
    h.defer(() => dns.close());
    for (let i = 0; i < 3; i++) dns.records.set(pod(i), { a: ['127.0.0.1'] });
    const backend = await h.backend(`dnssrv+${SRV}`, { storeRefreshMs: 100, storeDnsServer: { host: '127.0.0.1', port: dns.port }, storePoolSize: 2 }, { discoveryTimeoutMs: 200 });
    await waitUntil('every pool connected', async () => (backend.ring.stateCounts().connected === 6 ? true : undefined), FAST);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    const ring = new ShardRing([0, 1, 2].map((i) => ({ name: pod(i) })));
    const ringChanges = backend.ring.ringChanges;

    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    h.defer(() => agent.destroy());
    const written = new Map<string, string>(); // every key a 204 acknowledged, with its value
    for (const k of numberedKeys(1500, 'before-')) written.set(k, `v-${k}`);
    const keys = [...written.keys()];
    for (let i = 0; i < keys.length; i += 100) {
      const batch = await Promise.all(keys.slice(i, i + 100).map((k) => call(agent, backend.port, 'PUT', `/${k}`, written.get(k))));
      expect(new Set(batch.map((b) => b.outcome))).toEqual(new Set([204]));
    }

    // Eight workers: each reads a known key or writes a new one (one write in four).
    const log: Request[] = [];
    let stop = false;
    let serial = 0;
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const start = performance.now();
        if (n % 4 === 0) {
          const key = `live-${w}-${serial++}`;
          const value = `w-${key}`;
          const r = await call(agent, backend.port, 'PUT', `/${key}`, value);
          if (r.outcome === 204) written.set(key, value);
          log.push({ key, method: 'PUT', start, end: performance.now(), outcome: r.outcome });
        } else {
          const key = keys[(w * 7919 + n * 104729) % keys.length]!;
          const r = await call(agent, backend.port, 'GET', `/${key}`);
          if (r.outcome === 200) expect(r.body).toBe(written.get(key));
          log.push({ key, method: 'GET', start, end: performance.now(), outcome: r.outcome });
        }
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));

    const windows: { shard: string; start: number; end: number; stopMs: number; startMs: number; loadedKeys: number }[] = [];
    const loadFor = async (what: string, count: number) => {
      const from = log.length;
      await waitUntil(what, async () => (log.length >= from + count ? true : undefined), FAST);
    };
    try {
      await loadFor('load before the first restart', 400);
      for (let i = 0; i < 3; i++) {
        const shard = pod(i);
        const start = performance.now();
        const code = await stores[i]!.stop('SIGTERM');
        expect(code, `${shard} exit code`).toBe(0);
        const stopped = performance.now();
        stores[i] = await startStore(i);
        const ready = performance.now();
        await waitUntil(`${shard}'s pool up again`, async () => (backend.ring.shard(shard)?.pool.up ? true : undefined), FAST);
        const loaded = stores[i]!.logs.find((l) => l.msg === 'snapshot loaded');
        expect(loaded, `${shard} loaded its snapshot`).toBeDefined();
        windows.push({ shard, start, end: performance.now(), stopMs: stopped - start, startMs: ready - stopped, loadedKeys: Number(loaded!.keys) });
        await loadFor(`load after ${shard} restarted`, 400);

        // Every key acknowledged so far is served, with its value.
        const snapshot = [...written];
        for (let j = 0; j < snapshot.length; j += 200) {
          const results = await Promise.all(snapshot.slice(j, j + 200).map(([k]) => call(agent, backend.port, 'GET', `/${k}`)));
          results.forEach((r, m) => {
            const [k, v] = snapshot[j + m]!;
            expect(r.outcome, `${k} after ${shard} restarted`).toBe(200);
            expect(r.body, k).toBe(v);
          });
        }
        expect(backend.ring.ringChanges, `ring changes after ${shard} restarted`).toBe(ringChanges);
      }
    } finally {
      stop = true;
      await load;
    }

    // Failures: only the restarting shard's keys, during its own window.
    const failures = log.filter((r) => r.outcome !== 200 && r.outcome !== 204 && r.outcome !== 404);
    const stray = failures.filter((r) => !windows.some((w) => ring.shardFor(r.key).name === w.shard && r.end >= w.start && r.start <= w.end));
    expect(stray.map((r) => `${r.method} ${r.key} (${ring.shardFor(r.key).name}) ${r.outcome} at ${Math.round(r.start)}`)).toEqual([]);
    expect(log.filter((r) => r.method === 'GET' && r.outcome === 404)).toEqual([]);
    const report = windows.map((w) => {
      const inWindow = log.filter((r) => ring.shardFor(r.key).name === w.shard && r.end >= w.start && r.start <= w.end);
      const failed = inWindow.filter((r) => failures.includes(r));
      const outcomes = [...new Set(failed.map((r) => r.outcome))].join(',') || 'none';
      return `${w.shard}: window ${Math.round(w.end - w.start)} ms (stop ${Math.round(w.stopMs)}, start to ready ${Math.round(w.startMs)}, ${w.loadedKeys} keys loaded), ${failed.length} of ${inWindow.length} of its requests failed (${outcomes})`;
    });
    console.log(`rolling restart, ${log.length} requests: ${report.join('; ')}`);
  });
});
