// The backend's metrics (SPEC §4) on its admin port: exact names, labels from fixed
// sets, store errors by kind, the pool's connections, the USAGE probe, and no new
// series however many distinct keys are used.
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FastHistogram } from '../services/backend/fast-histogram.ts';
import { backendHarness, metricSum, scrape, send, seriesOf } from './helpers/backend-harness.ts';
import { freePort } from './helpers/service-process.ts';

const h = backendHarness();

const BACKEND_METRICS = [
  'kvbackend_http_requests_total',
  'kvbackend_http_request_duration_seconds',
  'kvbackend_store_commands_total',
  'kvbackend_store_command_duration_seconds',
  'kvbackend_store_up',
  'kvbackend_store_usage_bytes',
  'kvbackend_store_errors_total',
  'kvbackend_store_pool_connections',
];

describe('backend metrics', () => {
  it('exposes every metric of SPEC §4 by its exact name, with process metrics, on the admin port only', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port);
    await send(backend.port, 'PUT', '/k', 'v');
    await send(backend.port, 'GET', '/k');
    const text = await scrape(backend.metricsPort);
    for (const name of BACKEND_METRICS) expect(text).toContain(`# HELP ${name} `);
    expect(text).toContain('# TYPE kvbackend_http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE kvbackend_store_command_duration_seconds histogram');
    expect(text).toContain('# TYPE kvbackend_http_requests_total counter');
    expect(text).toContain('process_cpu_seconds_total');
    // Sub-millisecond buckets
    expect(text).toContain('kvbackend_http_request_duration_seconds_bucket{method="GET",le="0.0001"}');
    expect(text).toContain('kvbackend_store_command_duration_seconds_bucket{command="GET",le="0.00025"}');
    expect(text).toContain('kvbackend_http_request_duration_seconds_bucket{method="GET",le="+Inf"} 1');
    expect(text).toContain('kvbackend_http_request_duration_seconds_count{method="GET"} 1');
    // /metrics on the main port is just a key.
    expect((await send(backend.port, 'GET', '/metrics')).status).toBe(404);
  });

  it('counts requests by method (fixed set) and numeric status, and store commands by command and result', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port);
    const p = backend.port;
    await send(p, 'PUT', '/k', 'v');
    await send(p, 'POST', '/t?ttl=60', 'v');
    await send(p, 'GET', '/k');
    await send(p, 'GET', '/k');
    await send(p, 'GET', '/absent');
    await send(p, 'HEAD', '/k');
    await send(p, 'DELETE', '/k');
    await send(p, 'PATCH', '/k');
    await send(p, 'PROPFIND', '/k');
    await send(p, 'GET', '/');
    const text = await scrape(backend.metricsPort);
    const requests = (labels: string) => metricSum(text, 'kvbackend_http_requests_total', labels);
    expect(requests('{method="PUT",status="204"}')).toBe(1);
    expect(requests('{method="POST",status="204"}')).toBe(1);
    expect(requests('{method="GET",status="200"}')).toBe(2);
    expect(requests('{method="GET",status="404"}')).toBe(1);
    expect(requests('{method="GET",status="400"}')).toBe(1);
    expect(requests('{method="HEAD",status="200"}')).toBe(1);
    expect(requests('{method="DELETE",status="204"}')).toBe(1);
    expect(requests('{method="OTHER",status="405"}')).toBe(2);
    expect(text).not.toMatch(/method="(PATCH|PROPFIND)"/);
    expect(metricSum(text, 'kvbackend_http_request_duration_seconds_count', '{method="GET"}')).toBe(4);

    // Labels listed without braces: each series carries a `shard` label after them.
    const commands = (labels: string) => metricSum(text, 'kvbackend_store_commands_total', labels.slice(1, -1));
    expect(commands('{command="SET",result="ok"}')).toBe(1);
    expect(commands('{command="SETEX",result="ok"}')).toBe(1);
    expect(commands('{command="GET",result="ok"}')).toBe(3);
    expect(commands('{command="GET",result="not_found"}')).toBe(1);
    expect(commands('{command="DELETE",result="ok"}')).toBe(1);
    expect(metricSum(text, 'kvbackend_store_command_duration_seconds_count', '{command="GET"}')).toBe(4);
    expect(metricSum(text, 'kvbackend_store_errors_total')).toBe(0);
  });

  it('reports the store up with its usage from the periodic USAGE probe, and down when it goes away', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port, {}, { monitorIntervalMs: 50 });
    await send(backend.port, 'PUT', '/abc', '12345');
    await backend.monitor.nextResult();
    await backend.monitor.nextResult(); // a probe that started after the PUT
    let text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_up')).toBe(1);
    expect(metricSum(text, 'kvbackend_store_usage_bytes')).toBe(8); // key bytes + value bytes

    await store.close();
    // A probe already under way may still have succeeded; the next ones fail.
    while ((await backend.monitor.nextResult()) !== undefined);
    text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_up')).toBe(0);
  });

  it('shows the pool connections by state, read at scrape time', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port, { storePoolSize: 3 });
    await backend.ring.connect();
    let text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_pool_connections', 'state="connected"')).toBe(3);
    expect(metricSum(text, 'kvbackend_store_pool_connections')).toBe(3);
    backend.ring.destroy();
    text = await scrape(backend.metricsPort);
    expect(metricSum(text, 'kvbackend_store_pool_connections', 'state="closed"')).toBe(3);
  });

  it('counts store errors by kind: unavailable, timeout, protocol', async () => {
    const down = await h.backend(await freePort());
    await send(down.port, 'GET', '/k');
    await send(down.port, 'GET', '/k');
    let text = await scrape(down.metricsPort);
    expect(metricSum(text, 'kvbackend_store_errors_total', 'kind="unavailable"')).toBe(2);
    expect(metricSum(text, 'kvbackend_store_errors_total', 'kind="timeout"')).toBe(0);
    expect(metricSum(text, 'kvbackend_store_commands_total', 'command="GET",result="error"')).toBe(2);
    expect(metricSum(text, 'kvbackend_http_requests_total', '{method="GET",status="503"}')).toBe(2);

    const silent = await h.fake(() => ({ silent: true }));
    const slow = await h.backend(silent.port, { storeTimeoutMs: 50, storePoolSize: 1 });
    await send(slow.port, 'GET', '/k');
    text = await scrape(slow.metricsPort);
    expect(metricSum(text, 'kvbackend_store_errors_total', 'kind="timeout"')).toBe(1);
    expect(metricSum(text, 'kvbackend_http_requests_total', '{method="GET",status="504"}')).toBe(1);

    const liar = await h.fake((line) => (line.startsWith('SET') ? 'ERROR out of memory' : 'WHAT'));
    const confused = await h.backend(liar.port, { storePoolSize: 1 });
    await send(confused.port, 'GET', '/k');
    await send(confused.port, 'PUT', '/k', 'v');
    text = await scrape(confused.metricsPort);
    expect(metricSum(text, 'kvbackend_store_errors_total', 'kind="protocol"')).toBe(1);
    // An ERROR reply is the store answering, not a transport failure: result=error only.
    expect(metricSum(text, 'kvbackend_store_commands_total', 'command="SET",result="error"')).toBe(1);
    expect(metricSum(text, 'kvbackend_store_errors_total')).toBe(1);
    expect(metricSum(text, 'kvbackend_http_requests_total', '{method="PUT",status="507"}')).toBe(1);
  });

  it('adds no series for 1,000 distinct keys, and no key appears in any label', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port);
    const p = backend.port;
    const traffic = async (key: string) => {
      await send(p, 'PUT', `/${key}`, 'v');
      await send(p, 'PUT', `/${key}?ttl=100`, 'v');
      await send(p, 'GET', `/${key}`);
      await send(p, 'HEAD', `/${key}`);
      await send(p, 'DELETE', `/${key}`);
      await send(p, 'GET', `/${key}`);
      await send(p, 'PATCH', `/${key}`);
    };
    await traffic('warm-up');
    const before = seriesOf(await scrape(backend.metricsPort), 'kvbackend_');
    // fetch keeps its connections alive: 3,000 requests in well under a second.
    const base = `http://127.0.0.1:${p}`;
    for (let i = 0; i < 1000; i++) {
      const key = `key-${i}-${'x'.repeat(i % 50)}`;
      expect((await fetch(`${base}/${key}?ttl=100`, { method: 'PUT', body: 'v' })).status).toBe(204);
      expect(await (await fetch(`${base}/${key}`)).text()).toBe('v');
      expect((await fetch(`${base}/${key}`, { method: 'DELETE' })).status).toBe(204);
    }
    const text = await scrape(backend.metricsPort);
    const after = seriesOf(text, 'kvbackend_');
    expect(after).toEqual(before);
    expect(metricSum(text, 'kvbackend_http_requests_total', '{method="GET",status="200"}')).toBe(1001);
    expect(metricSum(text, 'kvbackend_store_commands_total', 'command="SETEX",result="ok"')).toBe(1001);
    expect(text).not.toMatch(/key-\d|warm-up/);
  });
});

describe('FastHistogram', () => {
  /** Samples as `name{sorted labels} value`, so label order does not matter. */
  const samples = (text: string) =>
    text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => {
        const m = /^(\w+)(?:\{(.*)\})? (.+)$/.exec(l)!;
        return `${m[1]}{${(m[2] ?? '').split(',').filter(Boolean).sort().join(',')}} ${m[3]}`;
      })
      .sort();

  it('exposes exactly what a prom-client Histogram exposes for the same observations', async () => {
    const buckets = [0.001, 0.01, 0.1, 1];
    const reference = new Registry();
    const fast = new Registry();
    const h = new Histogram({ name: 'h_seconds', help: 'help text', labelNames: ['method'], buckets, registers: [reference] });
    const f = new FastHistogram({ name: 'h_seconds', help: 'help text', labelNames: ['method'], buckets, registry: fast });
    const get = f.recorder({ method: 'GET' });
    const put = f.recorder({ method: 'PUT' });
    f.recorder({ method: 'DELETE' }); // never observed: no series, as with prom-client
    // Values on the bounds, between them, beyond the last one, and zero.
    for (const v of [0, 0.0005, 0.001, 0.0011, 0.01, 0.05, 0.1, 1, 3, 120]) {
      h.observe({ method: 'GET' }, v);
      get(v);
    }
    h.observe({ method: 'PUT' }, 0.002);
    put(0.002);
    expect(samples(await fast.metrics())).toEqual(samples(await reference.metrics()));
    expect(await fast.metrics()).toContain('# TYPE h_seconds histogram');
    expect(await fast.metrics()).toContain('# HELP h_seconds help text');

    fast.resetMetrics();
    expect(samples(await fast.metrics())).toEqual([]);
    get(0.5);
    expect(await fast.metrics()).toContain('h_seconds_count{method="GET"} 1');
  });
});

describe('store errors by kind', () => {
  it('counts only the store\'s failures: not an ERROR reply, not a refused argument, not an unknown error (a bug)', async () => {
    const { createBackendMetrics } = await import('../services/backend/backend-metrics.ts');
    const errors = await import('../services/client/errors.ts');
    const registry = new Registry();
    const metrics = createBackendMetrics({ registry });
    const observe = metrics.observerFor('s0');
    observe('GET', 'error', 0.001, new errors.StoreTimeoutError('late'));
    observe('GET', 'error', 0.001, new errors.StoreUnavailableError('down'));
    observe('GET', 'error', 0.001, new errors.StoreProtocolError('odd'));
    observe('SET', 'error', 0.001, new errors.StoreReplyError('out of memory'));
    observe('SET', 'error', 0.001, new errors.StoreArgumentError('invalid_value', 'LF'));
    observe('GET', 'error', 0.001, new TypeError('a bug in the backend'));
    const text = await registry.metrics();
    for (const kind of ['timeout', 'unavailable', 'protocol']) expect(metricSum(text, 'kvbackend_store_errors_total', `kind="${kind}",shard="s0"`), kind).toBe(1);
    expect(metricSum(text, 'kvbackend_store_errors_total')).toBe(3);
    // Every failed command still counts as result="error".
    expect(metricSum(text, 'kvbackend_store_commands_total', 'result="error"')).toBe(6);
  });
});
