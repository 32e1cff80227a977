// The end-to-end checks without a container engine: store and backend as real local
// processes, a real Prometheus scraping their admin ports with the repo's alert rules.
// The container suite (e2e-compose.test.ts) runs the same checks against the images.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/index.ts';
import { dashboardQueries, resolveTemplateVariables } from './helpers/dashboard-queries.ts';
import { prometheusAvailable, startPrometheus, type PrometheusProcess } from './helpers/prometheus-process.ts';
import { backendScript, freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';

const required = process.env.CI === 'true' || process.env.REQUIRE_PROMETHEUS === '1';
const available = prometheusAvailable();
if (!available) {
  console.warn(
    `e2e-processes: SKIPPED — no 'prometheus' binary on PATH${required ? ' (required here: failing)' : ' (install Debian\'s prometheus package to run it)'}`,
  );
}

const rules = fileURLToPath(new URL('../alert-rules.yml', import.meta.url));

describe.skipIf(!available && !required)('end to end with local processes and a real Prometheus', () => {
  let store: ServiceProcess | undefined;
  let backend: ServiceProcess | undefined;
  let prom: PrometheusProcess | undefined;
  let conn: StoreConnection | undefined;
  const ports = { store: 0, storeAdmin: 0, http: 0, backendAdmin: 0 };

  const startStore = () =>
    startServiceProcess(storeScript, { STORE_PORT: String(ports.store), STORE_METRICS_PORT: String(ports.storeAdmin) }, 'kvstore ready');
  const startBackend = () =>
    startServiceProcess(
      backendScript,
      {
        HOST: '127.0.0.1',
        PORT: String(ports.http),
        BACKEND_METRICS_PORT: String(ports.backendAdmin),
        KV_STORE: `127.0.0.1:${ports.store}`,
      },
      'kvbackend ready',
    );
  const http = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${ports.http}${path}`, init);
  const scalar = async (expr: string) => (await prom!.query(expr)).reduce((sum, s) => sum + s.value, 0);

  beforeAll(async () => {
    if (!available) throw new Error("no 'prometheus' binary on PATH, and CI=true / REQUIRE_PROMETHEUS=1 requires this suite");
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    store = await startStore();
    backend = await startBackend();
    prom = await startPrometheus(
      [
        { job: 'kvstore', target: `127.0.0.1:${ports.storeAdmin}` },
        { job: 'kvbackend', target: `127.0.0.1:${ports.backendAdmin}` },
      ],
      [rules],
    );
    conn = new StoreConnection({ host: '127.0.0.1', port: ports.store });
  });

  afterAll(async () => {
    conn?.destroy();
    await prom?.stop();
    await backend?.stop();
    await store?.stop();
  });

  it('round-trips over HTTP and shows the same data on the store TCP port', async () => {
    expect((await http('/e2e-greeting', { method: 'PUT', body: 'hello from http' })).status).toBe(204);
    const res = await http('/e2e-greeting');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello from http');
    expect((await conn!.get('e2e-greeting'))?.toString()).toBe('hello from http');
    await conn!.set('e2e-from-tcp', 'written over tcp');
    expect(await (await http('/e2e-from-tcp')).text()).toBe('written over tcp');
  });

  it('Prometheus scrapes every target and its counters agree with a known load', async () => {
    await prom!.waitFor('both targets up', async () => {
      const targets = await prom!.targets();
      return targets.length === 2 && targets.every((t) => t.health === 'up') ? targets : undefined;
    });
    const puts = 120;
    const gets = 180;
    const base = {
      put: await scalar('sum(kvbackend_http_requests_total{method="PUT",status="204"})'),
      get: await scalar('sum(kvbackend_http_requests_total{method="GET",status="200"})'),
      set: await scalar('sum(kvstore_commands_total{command="SET",result="ok"})'),
    };
    for (let i = 0; i < puts; i++) expect((await http(`/load-${i}`, { method: 'PUT', body: `v${i}` })).status).toBe(204);
    for (let i = 0; i < gets; i++) expect((await http(`/load-${i % puts}`)).status).toBe(200);
    await prom!.waitFor('scraped counters to include the load', async () => {
      const put = await scalar('sum(kvbackend_http_requests_total{method="PUT",status="204"})');
      const get = await scalar('sum(kvbackend_http_requests_total{method="GET",status="200"})');
      const set = await scalar('sum(kvstore_commands_total{command="SET",result="ok"})');
      return put - base.put === puts && get - base.get === gets && set - base.set === puts ? true : undefined;
    });
  });

  it('every query of every dashboard returns data', async () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(10);
    // rate() needs two scrapes after the load; wait until the busiest query has data.
    await prom!.waitFor('rates over the load', async () =>
      (await scalar('sum(rate(kvbackend_http_requests_total[30s]))')) > 0 ? true : undefined,
    );
    const empty: string[] = [];
    for (const q of queries) {
      const result = await prom!.query(resolveTemplateVariables(q.expr));
      if (result.length === 0) empty.push(`${q.dashboard} / ${q.panel}: ${q.expr}`);
    }
    expect(empty).toEqual([]);
  });

  it('restarting the backend loses no data held by the store', async () => {
    expect(await backend!.stop('SIGTERM')).toBe(0);
    backend = await startBackend();
    expect(await (await http('/e2e-greeting')).text()).toBe('hello from http');
  });

  it('a stopped store makes the backend answer 503, store_up 0 and the alert active; it recovers without a backend restart', async () => {
    expect(await store!.stop('SIGTERM')).toBe(0);
    expect((await http('/e2e-greeting')).status).toBe(503);
    await prom!.waitFor('kvbackend_store_up to drop to 0', async () =>
      (await prom!.query('kvbackend_store_up == 0')).length > 0 ? true : undefined,
    );
    await prom!.waitFor('the store-unreachable alert to become active', async () => {
      const alerts = await prom!.alerts();
      return alerts.find((a) => a.labels.alertname === 'KvBackendStoreUnreachable');
    });
    const backendPid = backend!.pid;
    store = await startStore();
    await prom!.waitFor('the backend to serve again', async () => ((await http('/e2e-after')).status === 404 ? true : undefined));
    expect((await http('/e2e-after', { method: 'PUT', body: 'back' })).status).toBe(204);
    expect(await (await http('/e2e-after')).text()).toBe('back');
    expect(backend!.pid).toBe(backendPid);
    expect(backend!.child.exitCode).toBeNull();
  });
});
