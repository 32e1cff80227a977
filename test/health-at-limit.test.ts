// Health at the connection limit: with MAX_CONNECTIONS filled by idle clients the store
// still serves its open connections, and so does a backend whose pool is connected. The
// probes must say so (ready, store up), and a full store must show as full — refused
// connections counted by kind — never as down.
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { backendHarness, metricSum, scrape, send, statusOf } from './helpers/backend-harness.ts';
import { waitUntil } from './helpers/wait-until.ts';

const h = backendHarness();

/** Opens idle connections to the store until it refuses one; the accepted ones stay open. */
async function fillConnections(port: number, max: number): Promise<Socket[]> {
  const held: Socket[] = [];
  for (let i = 0; i <= max; i++) {
    const socket = connect({ host: '127.0.0.1', port });
    h.defer(() => socket.destroy());
    socket.on('error', () => {});
    socket.setEncoding('latin1');
    // A PING proves the connection is served; a refused one gets the refusal line instead.
    socket.once('connect', () => socket.write('PING\n'));
    const firstLine = await new Promise<string>((resolve) => {
      let received = '';
      socket.on('data', (c: string) => {
        received += c;
        if (received.includes('\n')) resolve(received.slice(0, received.indexOf('\n')));
      });
      socket.once('close', () => resolve(received));
    });
    if (firstLine === 'ERROR max connections reached') return held;
    expect(firstLine).toBe('PONG');
    held.push(socket);
  }
  throw new Error(`the store accepted more than ${max} connections`);
}

describe('health at the connection limit', () => {
  it('a full store and a backend with a connected pool both report ready, and the backend keeps serving', async () => {
    const max = 6;
    const store = await h.store({ maxConnections: max });
    const backend = await h.backend(store.port, { storePoolSize: 2 }, { monitorIntervalMs: 20 });
    await waitUntil('the pool connected', async () => (backend.ring.stateCounts().connected === 2 ? true : undefined), { everyMs: 10 });

    const held = await fillConnections(store.port, max);
    expect(held.length + 2).toBe(max); // the pool's two connections and the idle clients fill it
    expect(store.server.connectionCount).toBe(max);

    expect(await statusOf(store.metricsPort, '/readyz')).toBe(200);
    const storeHealth = await fetch(`http://127.0.0.1:${store.metricsPort}/healthz`);
    expect(storeHealth.status).toBe(200);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    const backendHealth = await fetch(`http://127.0.0.1:${backend.metricsPort}/healthz`);
    expect(backendHealth.status).toBe(200);
    expect(await backendHealth.json()).toMatchObject({ status: 'ok' });
    // Two probes that started after the store filled up.
    await backend.monitor.nextResult();
    expect(await backend.monitor.nextResult()).toBeTypeOf('number');
    const metrics = await scrape(backend.metricsPort);
    expect(metricSum(metrics, 'kvbackend_store_up')).toBe(1);

    expect((await send(backend.port, 'PUT', '/k', 'v')).status).toBe(204);
    expect((await send(backend.port, 'GET', '/k')).text).toBe('v');
    // The probes were never refused: the one refusal is fillConnections' last connection.
    const storeMetrics = await scrape(store.metricsPort);
    expect(metricSum(storeMetrics, 'kvstore_rejected_connections_total')).toBe(1);
    expect(metricSum(storeMetrics, 'kvstore_max_connections')).toBe(max);
    // The full store shows as full: its connections at the limit (a probe's own connection closes after it).
    await waitUntil('the probe connections closed', async () => (store.server.connectionCount === max ? true : undefined), { everyMs: 10 });
    expect(metricSum(await scrape(store.metricsPort), 'kvstore_connections')).toBeGreaterThanOrEqual(max);
  });

  it('a backend whose pool the full store refuses is not ready, answers 503, and counts the refusals as kind="max_connections"', async () => {
    const max = 3;
    const store = await h.store({ maxConnections: max });
    await fillConnections(store.port, max);
    const backend = await h.backend(store.port, { storePoolSize: 2 }, { monitorIntervalMs: 20 });

    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(503);
    const health = await fetch(`http://127.0.0.1:${backend.metricsPort}/healthz`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { error: string }).error).toMatch(/max connections reached/);
    expect((await send(backend.port, 'GET', '/k')).status).toBe(503);
    await waitUntil(
      'refusals counted',
      async () => (metricSum(await scrape(backend.metricsPort), 'kvbackend_store_errors_total', 'kind="max_connections"') > 0 ? true : undefined),
      { everyMs: 20, deadlineMs: 10_000 },
    );
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_store_up')).toBe(0);
    expect(store.server.connectionCount).toBe(max);
  });
});
