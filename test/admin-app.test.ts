// The admin port's routes (services/shared/admin-app.ts) on Node's own HTTP server: GET and
// HEAD, the path matched without its query string, case-insensitively and with or without
// a trailing slash; anything else 404; a failing route 500, never a hung request.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, Counter } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminApp } from '../services/shared/admin-app.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function serve(handler: ReturnType<typeof createAdminApp>): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('admin app', () => {
  it('answers its four routes as Express did, and 404 for anything else', async () => {
    const registry = new Registry();
    new Counter({ name: 'kvtest_things_total', help: 'things', registers: [registry] }).inc(3);
    let up = true;
    const base = await serve(createAdminApp({ registry, probe: async () => (up ? 42 : Promise.reject(new Error('store down'))) }));
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toBe(registry.contentType);
    expect(await metrics.text()).toContain('kvtest_things_total 3');
    for (const path of ['/livez', '/livez/', '/LIVEZ', '/livez?probe=1']) {
      const res = await fetch(base + path);
      expect([path, res.status, res.headers.get('content-type'), await res.text()]).toEqual([path, 200, 'text/plain; charset=utf-8', 'ok\n']);
    }
    expect(await (await fetch(`${base}/readyz`)).text()).toBe('ready\n');
    const health = await fetch(`${base}/healthz`);
    expect(health.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await health.json()).toMatchObject({ status: 'ok', usage: 42 });
    up = false;
    const notReady = await fetch(`${base}/readyz`);
    expect([notReady.status, await notReady.text()]).toEqual([503, 'not ready\n']);
    const unhealthy = await fetch(`${base}/healthz`);
    expect([unhealthy.status, await unhealthy.json()]).toEqual([503, { status: 'error', error: 'store down' }]);
    const head = await fetch(`${base}/livez`, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length'), await head.text()]).toEqual([200, '3', '']);
    for (const [method, path] of [['POST', '/metrics'], ['DELETE', '/livez'], ['GET', '/'], ['GET', '/metricsx'], ['GET', '/livez/x']] as const) {
      const res = await fetch(base + path, { method });
      expect([method, path, res.status, await res.text()]).toEqual([method, path, 404, 'not found\n']);
    }
  });

  it("a /healthz answer of the service's own, and a route that throws answers 500", async () => {
    const registry = new Registry();
    registry.metrics = async () => {
      throw new Error('collector failed');
    };
    const base = await serve(createAdminApp({ registry, probe: async () => 1, health: async () => ({ statusCode: 207, body: { shards: [] } }) }));
    const health = await fetch(`${base}/healthz`);
    expect([health.status, await health.json()]).toEqual([207, { shards: [] }]);
    const metrics = await fetch(`${base}/metrics`);
    expect([metrics.status, await metrics.text()]).toEqual([500, 'internal error\n']);
  });
});
