// Every metric name a dashboard or an alert rule reads is one the services export: a
// store and a backend are started in-process, take a little traffic, and their live
// /metrics are compared with the names in grafana/dashboards/*.json and alert-rules.yml.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStoreList, parseStoreSource } from '../services/config/store-list.ts';
import { startBackendService, type BackendService } from '../services/backend/backend-service.ts';
import { loadBackendConfig, loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { parseExposition } from '../bench/harness/exposition.ts';
import { dashboardExpressions, metricNamesIn, readRules, type NamedExpr } from './helpers/observability-sources.ts';
import { tlsFixture } from './helpers/tls-certs.ts';

/** Names a scrape yields: sample names, plus the series names of every declared family. */
function exportedNames(text: string): Set<string> {
  const e = parseExposition(text);
  const names = new Set(e.samples.map((s) => s.name));
  for (const [name, type] of e.types) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

describe('metric names used by dashboards and alerts', () => {
  let store: StoreService | undefined;
  let backend: BackendService | undefined;
  /** A backend that finds its store through DNS (the system's lookup of localhost): it alone exports the discovery metrics. */
  let discovering: BackendService | undefined;
  /** A backend serving HTTPS (certificates made with openssl): it alone exports the TLS metrics. */
  let secure: BackendService | undefined;
  /** A store speaking TLS: it alone exports the store's TLS metrics. */
  let secureStore: StoreService | undefined;
  const exported = { store: new Set<string>(), backend: new Set<string>() };
  const rules = readRules();
  const recorded = new Set(rules.filter((r) => r.kind === 'record').map((r) => r.name));
  const uses: NamedExpr[] = [...dashboardExpressions(), ...rules.map((r) => ({ where: `rule ${r.name}`, expr: r.expr }))];

  beforeAll(async () => {
    const logger = createLogger({ name: 'observability-test', level: 'silent' });
    store = await startStoreService(loadStoreConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0 }), { logger });
    backend = await startBackendService(
      loadBackendConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0, store: parseStoreList(`127.0.0.1:${store.port}`, 'KV_STORE') }),
      { logger },
    );
    // Some traffic, so labelled series exist as they would in production.
    const http = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${backend!.port}${path}`, init);
    expect((await http('/observability-key', { method: 'PUT', body: 'v' })).status).toBe(204);
    expect((await http('/observability-key')).status).toBe(200);
    expect((await http('/observability-missing')).status).toBe(404);
    exported.store = exportedNames(await (await fetch(`http://127.0.0.1:${store.metricsPort}/metrics`)).text());
    exported.backend = exportedNames(await (await fetch(`http://127.0.0.1:${backend.metricsPort}/metrics`)).text());
    discovering = await startBackendService(
      loadBackendConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0, store: parseStoreSource(`dns+localhost:${store.port}`, 'KV_STORE') }),
      { logger },
    );
    for (const name of exportedNames(await (await fetch(`http://127.0.0.1:${discovering.metricsPort}/metrics`)).text())) exported.backend.add(name);
    const cert = tlsFixture().issue('observability', { eku: 'serverAuth' });
    secure = await startBackendService(
      loadBackendConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0, store: parseStoreList(`127.0.0.1:${store.port}`, 'KV_STORE'), tlsCertFile: cert.cert, tlsKeyFile: cert.key }),
      { logger },
    );
    for (const name of exportedNames(await (await fetch(`http://127.0.0.1:${secure.metricsPort}/metrics`)).text())) exported.backend.add(name);
    const f = tlsFixture();
    secureStore = await startStoreService(loadStoreConfig({}, { host: '127.0.0.1', port: 0, metricsPort: 0, warmupKeys: 0, tlsCertFile: f.server.cert, tlsKeyFile: f.server.key }), { logger });
    for (const name of exportedNames(await (await fetch(`http://127.0.0.1:${secureStore.metricsPort}/metrics`)).text())) exported.store.add(name);
  });

  afterAll(async () => {
    await secureStore?.close();
    await secure?.close();
    await discovering?.close();
    await backend?.close();
    await store?.close();
  });

  it('finds the names it checks (the scan is not empty)', () => {
    const all = new Set(uses.flatMap((u) => metricNamesIn(u.expr)));
    for (const n of ['kvstore_commands_total', 'kvbackend_http_requests_total', 'kvstore_command_duration_seconds_bucket', 'process_cpu_seconds_total']) {
      expect(all).toContain(n);
    }
    expect(exported.store.size).toBeGreaterThan(20);
    expect(exported.backend.size).toBeGreaterThan(20);
  });

  it('every name is exported by the service it belongs to, or is a recording rule of alert-rules.yml', () => {
    const missing = new Set<string>();
    for (const u of uses) {
      for (const name of metricNamesIn(u.expr)) {
        const ok = name.includes(':')
          ? recorded.has(name)
          : name.startsWith('kvstore_')
            ? exported.store.has(name)
            : name.startsWith('kvbackend_')
              ? exported.backend.has(name)
              : exported.store.has(name) && exported.backend.has(name); // process_ and nodejs_: both services
        if (!ok) missing.add(`${name} (${u.where})`);
      }
    }
    expect([...missing]).toEqual([]);
  });
});
