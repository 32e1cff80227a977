// The deployment and observability files, checked without a container engine:
// Prometheus config, alert rules and their unit tests (promtool), every PromQL
// expression of the dashboards (parsed by promtool), the generated dashboard JSON,
// Alertmanager's config (amtool), the compose file (docker compose config, when a
// compose v2 binary is around) and the Dockerfile.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALERT_THRESHOLDS, STORE_RSS_BOUND } from '../grafana/alert-thresholds.ts';
import { DATASOURCE, type Dashboard, type Panel } from '../grafana/dashboard-builder.ts';
import { STORE_NODE_FLAGS } from '../services/store/runtime/launch-flags.ts';
import { dashboardsDir, staleDashboards } from '../grafana/generate-dashboards.ts';
import {
  dashboardExpressions,
  promtoolRequired,
  readRepoFile,
  readRules,
  repoFile,
  resolved,
  runTool,
  toolAvailable,
} from './helpers/observability-sources.ts';

const promtool = toolAvailable('promtool');
if (!promtool) {
  console.warn(
    `observability-config: promtool checks SKIPPED — no 'promtool' on PATH${promtoolRequired ? ' (required here: failing)' : " (Debian: apt-get install prometheus; CI=true or REQUIRE_PROMTOOL=1 makes this a failure)"}`,
  );
}
const needPromtool = (): void => {
  if (!promtool) throw new Error("no 'promtool' on PATH, and CI=true / REQUIRE_PROMTOOL=1 requires the promtool checks");
};

const alertTests = readdirSync(repoFile('test/alerts'))
  .filter((f) => f.endsWith('.test.yml'))
  .sort()
  .map((f) => `test/alerts/${f}`);

const dashboards: Dashboard[] = readdirSync(dashboardsDir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readRepoFile(`grafana/dashboards/${f}`)) as Dashboard);
const panels = (d: Dashboard): Panel[] =>
  (d.panels ?? []).flatMap((p) => [p as Panel, ...((p as { panels?: Panel[] }).panels ?? [])]).filter((p) => p.type !== 'row');
const exprOf = (t: unknown): string => (t as { expr: string }).expr;

const rules = readRules();
const alerts = rules.filter((r) => r.kind === 'alert');

describe.skipIf(!promtool && !promtoolRequired)('promtool', () => {
  it('accepts prometheus.yml and the rule file it loads', () => {
    needPromtool();
    const r = runTool('promtool', ['check', 'config', 'prometheus.yml']);
    expect(r.output).toContain('SUCCESS: 1 rule files found');
    expect(r.status, r.output).toBe(0);
  });

  it('accepts alert-rules.yml, and counts the rules this suite reads from it', () => {
    needPromtool();
    const r = runTool('promtool', ['check', 'rules', 'alert-rules.yml']);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('passes the alert unit tests (each alert fires when it should, stays quiet when it should not)', () => {
    needPromtool();
    expect(alertTests.length).toBeGreaterThan(0);
    const r = runTool('promtool', ['test', 'rules', ...alertTests]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).not.toContain('FAILED');
  });

  it('parses every PromQL expression of the dashboards (as recording rules, variables resolved)', () => {
    needPromtool();
    const exprs = dashboardExpressions();
    expect(exprs.length).toBeGreaterThan(20);
    const dir = mkdtempSync(join(tmpdir(), 'kvstack-dashboard-rules-'));
    try {
      const file = join(dir, 'dashboard-queries.rules.json');
      const recorded = exprs.map((e, i) => ({ record: `dashboard:query_${i}:check`, expr: resolved(e.expr) }));
      for (const r of recorded) expect(r.expr, r.expr).not.toContain('$');
      // YAML is a superset of JSON: promtool reads this as a rules file.
      writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard-queries', rules: recorded }] }));
      const r = runTool('promtool', ['check', 'rules', file]);
      const legend = exprs.map((e, i) => `  dashboard:query_${i}:check = ${e.where}: ${e.expr}`).join('\n');
      expect(r.status, `${r.output}\n${legend}`).toBe(0);
      expect(r.output).toContain(`SUCCESS: ${exprs.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('alert rules', () => {
  const testText = alertTests.map((f) => readRepoFile(f)).join('\n');
  const runbooks = readRepoFile('docs/dashboards-and-alerts.md');
  // GitHub's heading anchors: lower case, spaces to dashes, punctuation dropped.
  const anchors = new Set(
    [...runbooks.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')),
  );

  it('covers what the issue asks for', () => {
    expect(new Set(alerts.map((a) => a.name))).toEqual(
      new Set([
        'KvStoreDown',
        'KvStoreMemoryHigh',
        'KvStoreRssAboveBound',
        'KvStorePageThreadGivenUp',
        'KvStoreHighEvictionRate',
        'KvStoreExpiryBacklog',
        'KvStoreConnectionsHigh',
        'KvStoreRejectedConnections',
        'KvStoreOutputLimitDisconnects',
        'KvStoreAuthFailures',
        'KvStorePasswordReloadFailing',
        'KvStoreTlsCertificateExpiring',
        'KvStoreTlsReloadFailing',
        'KvStoreLowHitRate',
        'KvStoreSnapshotFailing',
        'KvStoreSnapshotStale',
        'KvBackendDown',
        'KvBackendStoreUnreachable',
        'KvBackendStoreShardDown',
        'KvBackendStoreShardEjected',
        'KvBackendStoreShardSpreadUnbalanced',
        'KvBackendStoreDiscoveryFailing',
        'KvBackendStoreConnectionsRefused',
        'KvBackendBodyBufferFull',
        'KvBackendAuthFailures',
        'KvBackendTokensReloadFailing',
        'KvBackendCertificateExpiring',
        'KvBackendTlsReloadFailing',
        'KvBackend5xxRatioHigh',
        'KvBackendLatencyP99High',
        'KvBackendErrorBudgetBurnFast',
        'KvBackendErrorBudgetBurnSlow',
      ]),
    );
    expect(alerts.filter((a) => a.name === 'KvStoreConnectionsHigh').map((a) => a.severity).sort()).toEqual(['critical', 'warning']);
  });

  it.each(alerts.map((a) => [`${a.name} (${a.severity})`, a] as const))('%s has a severity, a summary, a description and a runbook section', (_, a) => {
    expect(['critical', 'warning']).toContain(a.severity);
    expect(a.text).toMatch(/^\s+summary: \S/m);
    expect(a.text).toMatch(/^\s+description: \S/m);
    expect(a.runbookUrl).toBe(`docs/dashboards-and-alerts.md#${a.name.toLowerCase()}`);
    expect(anchors).toContain(a.name.toLowerCase());
  });

  it.each([...new Set(alerts.map((a) => a.name))])('%s has unit tests where it fires and where it stays quiet', (name) => {
    expect(testText).toMatch(new RegExp(`alertname: ${name}\\s*\\n\\s*exp_alerts:\\s*\\n\\s*- exp_labels:`));
    expect(testText).toMatch(new RegExp(`alertname: ${name}\\s*\\n\\s*exp_alerts: \\[\\]`));
  });

  it('uses the same thresholds the dashboards draw', () => {
    const drawn = new Set(
      dashboards.flatMap((d) =>
        panels(d).flatMap((p) => ((p.fieldConfig?.defaults.thresholds as { steps: { value: number | null }[] }).steps ?? []).map((s) => s.value)),
      ),
    );
    for (const [name, values] of Object.entries(ALERT_THRESHOLDS)) {
      const exprs = alerts.filter((a) => a.name === name).map((a) => a.expr);
      expect(exprs.length, name).toBeGreaterThan(0);
      const compared = exprs.flatMap((e) => [...e.matchAll(/[<>]=?\s*(\d+(?:\.\d+)?)\s*$/gm)].map((m) => Number(m[1])));
      for (const v of values) {
        expect(compared, `${name} compares against ${v}`).toContain(v);
        expect(drawn, `a dashboard panel draws the ${name} threshold ${v}`).toContain(v);
      }
    }
  });

  it('holds KvStoreRssAboveBound to the RSS bound the dashboard draws and the Kubernetes manifests size from', () => {
    const bound = `${STORE_RSS_BOUND.capFactor} * kvstore_max_memory_bytes + ${STORE_RSS_BOUND.baseBytes}`;
    const [alert] = alerts.filter((a) => a.name === 'KvStoreRssAboveBound');
    expect(alert!.expr).toContain(`(${bound})`);
    const drawn = dashboardExpressions().map((e) => e.expr.replace(/\{[^}]*\}/g, ''));
    expect(drawn).toContain(bound);
  });

  it('keeps histogram_quantile over buckets summed by le', () => {
    for (const e of [...rules.map((r) => r.expr), ...dashboardExpressions().map((e) => e.expr)]) {
      for (const m of e.matchAll(/histogram_quantile\(\s*[\d.]+,\s*sum by \(([^)]*)\)/g)) {
        expect(m[1]!.split(',').map((s) => s.trim()), e).toContain('le');
      }
      expect(e.match(/histogram_quantile/g)?.length ?? 0, e).toBe([...e.matchAll(/histogram_quantile\(\s*[\d.]+,\s*sum by \(/g)].length);
    }
  });
});

describe('prometheus.yml and alertmanager.yml', () => {
  const prom = readRepoFile('prometheus.yml');

  it('scrapes both admin ports under the fixed job names, loads the rules and alerts Alertmanager', () => {
    expect(prom).toMatch(/- job_name: kvstore\n\s+static_configs:\n\s+- targets: \["store:8766"\]/);
    expect(prom).toMatch(/- job_name: kvbackend\n\s+static_configs:\n\s+- targets: \["backend:8081"\]/);
    expect(prom).toMatch(/^rule_files:\n\s+- alert-rules.yml/m);
    expect(prom).toMatch(/targets: \["alertmanager:9093"\]/);
    const interval = /^\s+scrape_interval: (\d+)s$/m.exec(prom);
    expect(Number(interval?.[1])).toBeGreaterThanOrEqual(5);
    expect(Number(interval?.[1])).toBeLessThanOrEqual(15);
  });

  it('routes by severity to replaceable receivers', () => {
    const am = readRepoFile('alertmanager.yml');
    expect(am).toContain(`matchers: ['severity="critical"']`);
    expect(am).toContain(`matchers: ['severity="warning"']`);
  });

  const amtool = toolAvailable('amtool');
  if (!amtool) console.warn("observability-config: amtool check SKIPPED — no 'amtool' on PATH (Debian: prometheus-alertmanager)");
  it.skipIf(!amtool)('amtool accepts alertmanager.yml', () => {
    const r = runTool('amtool', ['check-config', 'alertmanager.yml']);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });
});

describe('Grafana dashboards', () => {
  it('the committed JSON is what `npm run dashboards` generates', async () => {
    expect(await staleDashboards()).toEqual([]);
  });

  it.each(dashboards.map((d) => [d.title, d] as const))('%s: every panel queries the datasource variable with units, job and instance variables', (_, d) => {
    expect(d.templating.list?.map((v) => v.name)).toEqual(['datasource', 'job', 'instance']);
    const ids = (d.panels ?? []).map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => typeof id === 'number' && id > 0)).toBe(true);
    for (const p of panels(d)) {
      expect(p.datasource, p.title).toEqual(DATASOURCE);
      expect(p.fieldConfig?.defaults.unit, p.title).toBeTruthy();
      expect(p.gridPos!.x + p.gridPos!.w, p.title).toBeLessThanOrEqual(24);
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) {
        expect((t as { datasource?: unknown }).datasource, p.title).toEqual(DATASOURCE);
        expect(exprOf(t), p.title).toContain('job=~"$job"');
        // Recording rules aggregate instances away; everything else follows $instance.
        if (!/\w+:\w+:\w+/.test(exprOf(t))) expect(exprOf(t), p.title).toContain('instance=~"$instance"');
      }
    }
  });

  it('has the panels the issue asks for', () => {
    const titles = dashboards.flatMap((d) => panels(d).map((p) => p.title));
    const exprs = dashboards.flatMap((d) => panels(d).flatMap((p) => p.targets!.map(exprOf))).join('\n');
    for (const t of ['Commands/s by command and result', 'Hit ratio', 'Command latency p50 / p99', 'HTTP latency p50 / p99', 'Usage against the cap', 'Keys', 'Evictions and expirations', 'Connections of the limit', 'HTTP requests/s by status', '5xx ratio', 'Store reachable from the backend', 'CPU', 'Memory', 'Event-loop lag p50 / p99', 'Shard up', 'Shards by state and ring changes', 'Shard usage against the cap', 'Store commands/s by shard', 'Key spread']) {
      expect(titles).toContain(t);
    }
    for (const m of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds', 'kvstore_max_connections', 'kvstore_max_memory_bytes']) {
      expect(exprs).toContain(m);
    }
  });

  it('provisioning: the default Prometheus datasource the variable picks, and the folder compose mounts', () => {
    const ds = readRepoFile('grafana/provisioning/datasources/kvstack.yml');
    // With no choice saved, a datasource variable starts on the default datasource of its type.
    expect(ds).toMatch(/- name: Prometheus\n\s+uid: kvstack-prometheus\n\s+type: prometheus\n\s+access: proxy\n\s+url: http:\/\/prometheus:9090\n\s+isDefault: true\n/);
    const provider = readRepoFile('grafana/provisioning/dashboards/kvstack.yml');
    const path = /^\s+path: (\S+)$/m.exec(provider)?.[1];
    expect(readRepoFile('docker-compose.yml')).toContain(`- ./grafana/dashboards:${path}:ro`);
  });
});

/** The text of each service of docker-compose.yml, by name (2-space indented keys under `services:`). */
function composeServices(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const section = /^services:\n([\s\S]*?)(?=^\S)/m.exec(text)?.[1] ?? '';
  for (const m of section.matchAll(/^ {2}([\w-]+):\n((?:(?: {4}.*)?\n)*)/gm)) out.set(m[1]!, m[2]!);
  return out;
}

describe('docker-compose.yml', () => {
  const text = readRepoFile('docker-compose.yml');
  const services = composeServices(text);
  const svc = (name: string): string => services.get(name) ?? '';

  it('has the five services with pinned images', () => {
    expect([...services.keys()].sort()).toEqual(['alertmanager', 'backend', 'grafana', 'prometheus', 'store']);
    expect(svc('prometheus')).toContain('image: prom/prometheus:v2.42.0');
    expect(svc('alertmanager')).toContain('image: prom/alertmanager:v0.25.0');
    expect(svc('grafana')).toContain('image: grafana/grafana:11.6.14');
    expect(svc('store')).toMatch(/image: kvstack-store:local\n\s+build:\n\s+context: \.\n\s+dockerfile: deploy\/Dockerfile\n\s+target: store/);
    expect(svc('backend')).toMatch(/image: kvstack-backend:local\n\s+build:\n\s+context: \.\n\s+dockerfile: deploy\/Dockerfile\n\s+target: backend/);
  });

  it('runs the Grafana line the dashboards\' SDK is generated for', () => {
    const sdk = (JSON.parse(readRepoFile('package.json')) as { devDependencies: Record<string, string> }).devDependencies['@grafana/grafana-foundation-sdk'];
    const sdkLine = /^(\d+\.\d+)\.\d+-cog/.exec(sdk ?? '')?.[1];
    const imageLine = /image: grafana\/grafana:(\d+\.\d+)\.\d+\n/.exec(svc('grafana'))?.[1];
    expect(sdkLine, `SDK version ${sdk}`).toBeDefined();
    expect(imageLine).toBe(sdkLine);
  });

  it('keeps the store private and publishes the rest on configurable ports', () => {
    expect(svc('store')).not.toMatch(/^\s+ports:/m);
    expect(svc('store')).toMatch(/STORE_HOST: 0\.0\.0\.0/);
    expect(svc('backend')).toMatch(/HOST: 0\.0\.0\.0/);
    expect(svc('backend')).toContain('KV_STORE: store:8765');
    expect(svc('backend')).toContain('${BACKEND_PORT:-8080}:8080');
    expect(svc('prometheus')).toContain('${PROMETHEUS_PORT:-9090}:9090');
    expect(svc('alertmanager')).toContain('${ALERTMANAGER_PORT:-9093}:9093');
    expect(svc('grafana')).toContain('${GRAFANA_PORT:-3000}:3000');
  });

  it('starts in order on health, runs Node under an init, keeps data in named volumes', () => {
    expect(text).toMatch(/x-node-service: &node-service\n\s+init: true/);
    for (const s of ['store', 'backend']) {
      expect(svc(s)).toContain('<<: *node-service');
      expect(svc(s)).toMatch(/healthcheck:\n\s+test: \["CMD", "node", "-e", ".*\/readyz/);
    }
    expect(svc('backend')).toMatch(/depends_on:\n\s+store:\n\s+condition: service_healthy/);
    expect(svc('grafana')).toMatch(/depends_on:\n\s+prometheus:\n\s+condition: service_started/);
    expect(svc('prometheus')).toContain('- prometheus-data:/prometheus');
    expect(svc('grafana')).toContain('- grafana-data:/var/lib/grafana');
    expect(text).toMatch(/^volumes:\n(?: {2}\S.*\n)*? {2}prometheus-data:/m);
    expect(text).toMatch(/^volumes:\n(?: {2}\S.*\n)*? {2}grafana-data:/m);
  });

  it('mounts files that exist', () => {
    const mounts = [...text.matchAll(/- \.\/([\w./-]+):/g)].map((m) => m[1]!);
    expect(mounts).toEqual(expect.arrayContaining(['prometheus.yml', 'alert-rules.yml', 'alertmanager.yml', 'grafana/provisioning', 'grafana/dashboards']));
    for (const m of mounts) expect(existsSync(repoFile(m)), m).toBe(true);
  });

  const composeV2 = runTool('docker', ['compose', 'version']).status === 0;
  if (!composeV2) console.warn("observability-config: `docker compose config` SKIPPED — no compose v2 plugin for 'docker' here");
  it.skipIf(!composeV2)('docker compose config accepts it', () => {
    const r = runTool('docker', ['compose', '-f', 'docker-compose.yml', 'config', '-q']);
    expect(r.status, r.output).toBe(0);
  });
});

describe('deploy/compose.shards.yml: three store shards behind the backend', () => {
  const text = readRepoFile('deploy/compose.shards.yml');
  const services = composeServices(`${text}x-end: {}\n`); // services is its last section
  const shardsProm = readRepoFile('deploy/prometheus.shards.yml');

  it('adds two shards like the base store, lists all three in KV_STORE by name, and starts the backend once they are ready', () => {
    expect([...services.keys()].sort()).toEqual(['backend', 'prometheus', 'store-1', 'store-2']);
    for (const s of ['store-1', 'store-2']) expect(services.get(s)).toContain('extends: { file: docker-compose.yml, service: store }');
    expect(services.get('backend')).toContain('KV_STORE: store-0=store:8765,store-1=store-1:8765,store-2=store-2:8765');
    expect(services.get('backend')).toMatch(/depends_on:\n\s+store-1:\n\s+condition: service_healthy\n\s+store-2:\n\s+condition: service_healthy/);
    expect(text).not.toMatch(/^\s+ports:/m); // the shards stay private, as the base store
  });

  it('points Prometheus at a config that scrapes every shard, labelled with its KV_STORE name, and loads the same rules', () => {
    expect(services.get('prometheus')).toContain('--config.file=/etc/prometheus/prometheus.shards.yml');
    expect(services.get('prometheus')).toContain('- ./deploy/prometheus.shards.yml:/etc/prometheus/prometheus.shards.yml:ro');
    const names = /KV_STORE: (\S+)/.exec(services.get('backend')!)![1]!.split(',').map((e) => e.split('=') as [string, string]);
    for (const [name, address] of names) {
      const host = address.split(':')[0];
      expect(shardsProm).toContain(`- targets: ["${host}:8766"]\n        labels: { shard: ${name} }`);
    }
    expect(shardsProm).toMatch(/^rule_files:\n\s+- alert-rules.yml/m);
    // The rest as in prometheus.yml: the same backend job and Alertmanager.
    expect(shardsProm).toContain('targets: ["backend:8081"]');
    expect(shardsProm).toContain('targets: ["alertmanager:9093"]');
  });

  it.skipIf(!promtool && !promtoolRequired)('promtool accepts its Prometheus config with the rule file beside it, as mounted', () => {
    needPromtool();
    const dir = mkdtempSync(join(tmpdir(), 'kvstack-prom-shards-'));
    try {
      writeFileSync(join(dir, 'prometheus.yml'), shardsProm);
      writeFileSync(join(dir, 'alert-rules.yml'), readRepoFile('alert-rules.yml'));
      const r = runTool('promtool', ['check', 'config', join(dir, 'prometheus.yml')]);
      expect(r.output).toContain('SUCCESS: 1 rule files found');
      expect(r.status, r.output).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const composeV2 = runTool('docker', ['compose', 'version']).status === 0;
  if (!composeV2) console.warn("observability-config: `docker compose config` of deploy/compose.shards.yml SKIPPED — no compose v2 plugin for 'docker' here");
  it.skipIf(!composeV2)('docker compose config accepts it over docker-compose.yml: seven services, three stores alike', () => {
    const files = ['-f', 'docker-compose.yml', '-f', 'deploy/compose.shards.yml'];
    const r = runTool('docker', ['compose', ...files, 'config', '-q']);
    expect(r.status, r.output).toBe(0);
    const listed = runTool('docker', ['compose', ...files, 'config', '--services']);
    expect(listed.output.trim().split('\n').sort()).toEqual(['alertmanager', 'backend', 'grafana', 'prometheus', 'store', 'store-1', 'store-2']);
    const json = JSON.parse(runTool('docker', ['compose', ...files, 'config', '--format', 'json']).output) as {
      services: Record<string, { image: string; environment: Record<string, string>; command?: string[]; volumes?: { source: string }[] }>;
    };
    const volumes = new Set<string>();
    for (const s of ['store', 'store-1', 'store-2']) {
      expect(json.services[s]!.image).toBe(json.services.store!.image);
      expect(json.services[s]!.environment).toEqual(json.services.store!.environment);
      // Each shard writes its snapshot on its own volume.
      for (const v of json.services[s]!.volumes ?? []) volumes.add(v.source);
    }
    expect(volumes.size).toBe(3);
    expect(json.services.backend!.environment.KV_STORE).toBe('store-0=store:8765,store-1=store-1:8765,store-2=store-2:8765');
    expect(json.services.prometheus!.command).toContain('--config.file=/etc/prometheus/prometheus.shards.yml');
  });
});

describe('deploy/Dockerfile', () => {
  const text = readRepoFile('deploy/Dockerfile');
  const stage = (name: string): string => new RegExp(`^FROM \\S+ AS ${name}\\n([\\s\\S]*?)(?=^FROM |$(?![\\s\\S]))`, 'm').exec(text)?.[1] ?? '';

  it('builds with the dev dependencies, runs with production ones as the node user', () => {
    expect(text).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    expect(stage('build')).toMatch(/RUN npm ci\b/);
    expect(stage('build')).toContain('RUN npm run build');
    expect(stage('runtime')).toMatch(/RUN npm ci --omit=dev\b/);
    expect(stage('runtime')).toContain('COPY --from=build /app/dist ./dist');
    expect(stage('runtime')).toMatch(/^USER node$/m);
    const version = (JSON.parse(readRepoFile('package.json')) as { version: string }).version;
    expect(stage('runtime')).toContain(`ARG VERSION=${version}`);
  });

  it.each([
    ['store', 'STORE_METRICS_PORT', 'dist/store/main.js', 'services/store/main.ts', '8765 8766', STORE_NODE_FLAGS],
    ['backend', 'BACKEND_METRICS_PORT', 'dist/backend/main.js', 'services/backend/main.ts', '8080 8081', []],
  ])('the %s image: entry point, ports, healthcheck on /readyz of its admin port, labels', (name, portVar, entry, source, ports, nodeFlags) => {
    const s = stage(name);
    expect(text).toMatch(new RegExp(`^FROM runtime AS ${name}$`, 'm'));
    expect(s).toContain(`CMD ${JSON.stringify(['node', '--enable-source-maps', ...nodeFlags, entry]).replaceAll(',', ', ')}`);
    expect(() => readRepoFile(source)).not.toThrow();
    expect(s).toContain(`EXPOSE ${ports}`);
    expect(s).toMatch(new RegExp(`HEALTHCHECK [\\s\\S]*process\\.env\\.${portVar}[\\s\\S]*/readyz`));
    expect(s).toContain(`org.opencontainers.image.title="kvstack-${name}"`);
  });

  it('.dockerignore sends only what the build needs', () => {
    const ignore = readRepoFile('.dockerignore').split('\n');
    expect(ignore).toContain('*');
    for (const keep of ['!package.json', '!package-lock.json', '!tsconfig.json', '!tsconfig.build.json', '!services/']) expect(ignore).toContain(keep);
  });
});
