import { expect, it } from 'vitest';
import { StoreConnection } from '../../services/client/index.ts';
import { dashboardQueries, resolveTemplateVariables } from './dashboard-queries.ts';
import type { PrometheusApi } from './prometheus-api.ts';

/** A running stack, however it was started (local processes or containers). */
export interface Stack {
  readonly backendUrl: string;
  readonly store: { readonly host: string; readonly port: number };
  readonly prometheus: PrometheusApi;
  stopStore(): Promise<void>;
  startStore(): Promise<void>;
  restartBackend(): Promise<void>;
  /** Something that changes when the backend restarts (a PID, a container start time). */
  backendIdentity(): Promise<string>;
}

/** What a suite does to its stack's services: the part of a Stack that differs by how it was started. */
export type StackControl = Pick<Stack, 'stopStore' | 'startStore' | 'restartBackend' | 'backendIdentity'>;

/**
 * A Stack whose backend and store answer on loopback, at the host ports `ports()` gives
 * each time it is asked (a container's may change when it restarts).
 */
export function loopbackStack(ports: () => { readonly backend: number; readonly store: number }, prometheus: () => PrometheusApi, control: StackControl): Stack {
  return {
    get backendUrl() {
      return `http://127.0.0.1:${ports().backend}`;
    },
    get store() {
      return { host: '127.0.0.1', port: ports().store };
    },
    get prometheus() {
      return prometheus();
    },
    ...control,
  };
}

/**
 * The end-to-end checks of the stack, shared by the process suite and the container
 * suites (compose, and the Testcontainers module) so all prove the same things. Registers its tests in the calling describe;
 * they run in order and build on each other.
 */
export function defineStackChecks(stack: () => Stack): void {
  const http = (path: string, init?: RequestInit) => fetch(stack().backendUrl + path, init);
  const withStore = async <T>(fn: (conn: StoreConnection) => Promise<T>): Promise<T> => {
    const conn = new StoreConnection({ ...stack().store, timeoutMs: 5000, reconnect: false });
    try {
      return await fn(conn);
    } finally {
      conn.destroy();
    }
  };

  it('round-trips over HTTP and shows the same data on the store TCP port', async () => {
    expect((await http('/e2e-greeting', { method: 'PUT', body: 'hello from http' })).status).toBe(204);
    const res = await http('/e2e-greeting');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello from http');
    await withStore(async (conn) => {
      expect((await conn.get('e2e-greeting'))?.toString()).toBe('hello from http');
      await conn.set('e2e-from-tcp', 'written over tcp');
    });
    expect(await (await http('/e2e-from-tcp')).text()).toBe('written over tcp');
  });

  it('Prometheus scrapes every target and its counters agree with a known load', async () => {
    const prom = stack().prometheus;
    await prom.waitFor('kvstore and kvbackend targets up', async () => {
      const targets = (await prom.targets()).filter((t) => t.job === 'kvstore' || t.job === 'kvbackend');
      return targets.length === 2 && targets.every((t) => t.health === 'up') ? targets : undefined;
    });
    const counters = {
      put: 'sum(kvbackend_http_requests_total{method="PUT",status="204"})',
      get: 'sum(kvbackend_http_requests_total{method="GET",status="200"})',
      set: 'sum(kvstore_commands_total{command="SET",result="ok"})',
      storeGet: 'sum(kvstore_commands_total{command="GET",result="ok"})',
    };
    const read = async () =>
      Object.fromEntries(await Promise.all(Object.entries(counters).map(async ([k, q]) => [k, await prom.sum(q)]))) as Record<keyof typeof counters, number>;
    // A reading is exact once both targets have been scraped after the traffic ended:
    // `up`'s timestamp is the start time of each target's last scrape.
    const readAfterNow = async () => {
      const now = Date.now() / 1000;
      await prom.waitFor('both targets scraped again', async () => {
        const scraped = await prom.query('timestamp(up{job=~"kvstore|kvbackend"})');
        return scraped.length === 2 && scraped.every((s) => s.value > now) ? true : undefined;
      });
      return read();
    };
    const before = await readAfterNow();
    const puts = 120;
    const gets = 180;
    for (let i = 0; i < puts; i++) expect((await http(`/load-${i}`, { method: 'PUT', body: `v${i}` })).status).toBe(204);
    for (let i = 0; i < gets; i++) expect((await http(`/load-${i % puts}`)).status).toBe(200);
    const after = await readAfterNow();
    expect(after.put - before.put).toBe(puts);
    expect(after.get - before.get).toBe(gets);
    expect(after.set - before.set).toBe(puts);
    expect(after.storeGet - before.storeGet).toBe(gets);
    // The store image carries its C add-on for client sockets (deploy/Dockerfile, the native stage).
    expect(await prom.sum('kvstore_native_io')).toBe(1);
  });

  it('every query of every dashboard returns data', async () => {
    const prom = stack().prometheus;
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(10);
    // rate() needs two scrapes after the load.
    await prom.waitFor('rates over the load', async () => ((await prom.sum('sum(rate(kvbackend_http_requests_total[1m]))')) > 0 ? true : undefined));
    const empty: string[] = [];
    for (const q of queries) {
      // Recording rules (the SLO panels) have data only once Prometheus has evaluated
      // them after the load: give each query a bounded wait, not a single look.
      const expr = resolveTemplateVariables(q.expr, '1m');
      const hasData = await prom
        .waitFor(`data for ${q.panel}`, async () => ((await prom.query(expr)).length > 0 ? true : undefined), 30_000)
        .catch(() => false);
      if (!hasData) empty.push(`${q.dashboard} / ${q.panel}: ${q.expr}`);
    }
    expect(empty).toEqual([]);
  });

  it('restarting the backend loses no data held by the store', async () => {
    const before = await stack().backendIdentity();
    await stack().restartBackend();
    expect(await stack().backendIdentity()).not.toBe(before);
    expect(await (await http('/e2e-greeting')).text()).toBe('hello from http');
  });

  it('a stopped store: the backend answers 503, kvbackend_store_up is 0, the alert is active; it recovers without a backend restart', async () => {
    const prom = stack().prometheus;
    const backend = await stack().backendIdentity();
    await stack().stopStore();
    await prom.waitFor('the backend to answer 503', async () => ((await http('/e2e-greeting')).status === 503 ? true : undefined));
    await prom.waitFor('kvbackend_store_up to drop to 0', async () => ((await prom.query('kvbackend_store_up == 0')).length > 0 ? true : undefined));
    await prom.waitFor('KvBackendStoreUnreachable to become active', async () =>
      (await prom.alerts()).find((a) => a.labels.alertname === 'KvBackendStoreUnreachable'),
    );
    await stack().startStore();
    await prom.waitFor('the backend to reach the store again', async () => ((await http('/e2e-after')).status === 404 ? true : undefined));
    // Warm restart: the store wrote its snapshot when it stopped and loaded it again.
    expect(await (await http('/e2e-greeting')).text()).toBe('hello from http');
    expect((await http('/e2e-after', { method: 'PUT', body: 'back' })).status).toBe(204);
    expect(await (await http('/e2e-after')).text()).toBe('back');
    await prom.waitFor('kvbackend_store_up back to 1', async () => ((await prom.query('kvbackend_store_up == 1')).length > 0 ? true : undefined));
    expect(await stack().backendIdentity()).toBe(backend);
    // A container stopped and started, and several Prometheus scrapes and an alert
    // evaluation waited for: 15-30 s on a 2-core VM, past the suite's default.
  }, 120_000);
}
