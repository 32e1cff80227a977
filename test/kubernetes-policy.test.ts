// What a reviewer of the Kubernetes manifests would check by hand, on the rendered
// overlays: probes, resources and SPEC §9's security context on every container; every
// Service, PodDisruptionBudget, NetworkPolicy, autoscaler and ServiceMonitor points at
// pods and ports that exist; only the backend reaches the store's port; the store's
// memory limit, start-up probe, grace period and volume cover what its MAX_MEMORY_BYTES
// needs; the backend's KV_STORE is the headless Service's SRV name; the PrometheusRule is
// alert-rules.yml and the ConfigMap the dashboard JSON. Each check is also run on a
// manifest broken on purpose, so a check that can no longer fail shows up here.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { storeSizing } from '../deploy/kubernetes/store-sizing.ts';
import { storeRssBoundBytes } from '../grafana/alert-thresholds.ts';
import { loadBackendConfig, loadStoreConfig } from '../services/config/config.ts';
import { isDiscovery } from '../services/config/store-list.ts';
import {
  backendWorkload,
  checkContainers,
  checkImages,
  checkNetworkPolicies,
  checkSelectorsAndPorts,
  checkStoreAddress,
  checkStorePassword,
  checkStoreSizing,
  describeKubectl,
  envOf,
  type Container,
  overlays,
  renderedSizingInputs,
  renderOverlay,
  renderWithComponent,
  storeWorkload,
  type K8sObject,
} from './helpers/kubernetes-manifests.ts';
import { readRepoFile, repoFile } from './helpers/observability-sources.ts';
import { tlsFixture } from './helpers/tls-certs.ts';

const version = (JSON.parse(readRepoFile('package.json')) as { version: string }).version;

/** The rendered objects with one of them changed: `pick` finds it, `edit` breaks it. */
function broken(objects: K8sObject[], pick: (o: K8sObject) => boolean, edit: (o: K8sObject) => void): K8sObject[] {
  const copy = structuredClone(objects);
  const target = copy.find(pick);
  if (!target) throw new Error('nothing to break');
  edit(target);
  return copy;
}
/** The KV_STORE list docs/kubernetes.md gives instead of discovery: each shard named by its pod's fully qualified host name. */
function fixedStoreList(objects: K8sObject[]): string {
  const sts = storeWorkload(objects)!.object;
  const port = Number(envOf(storeWorkload(objects)!.containers[0]!, 'STORE_PORT'));
  return Array.from({ length: sts.spec.replicas }, (_, i) => {
    const host = `${sts.metadata.name}-${i}.${sts.spec.serviceName}.${sts.metadata.namespace}.svc.cluster.local`;
    return `${host}=${host}:${port}`;
  }).join(',');
}
const kind = (k: string, name?: string) => (o: K8sObject) => o.kind === k && (name === undefined || o.metadata.name === name);
const storeContainer = (o: K8sObject) => o.spec.template.spec.containers[0];

describeKubectl('Kubernetes policy', () => {
  const rendered = new Map<string, K8sObject[]>();
  let operator: K8sObject[] = [];
  beforeAll(() => {
    for (const overlay of overlays()) rendered.set(overlay, renderOverlay(overlay));
    operator = rendered.get('prometheus-operator')!;
  });

  describe.each(overlays())('%s', (overlay) => {
    const objects = (): K8sObject[] => rendered.get(overlay)!;

    it('every container has liveness and readiness probes, cpu and memory requests and limits, and the security context', () => {
      expect(checkContainers(objects())).toEqual([]);
      expect(storeWorkload(objects())!.containers[0]!.startupProbe, 'the store has a startup probe').toBeDefined();
    });

    it('every Service, PDB, NetworkPolicy, HPA and ServiceMonitor selects pods and names ports that exist', () => {
      expect(checkSelectorsAndPorts(objects())).toEqual([]);
    });

    it('only the backend reaches the store port; Prometheus reaches both admin ports', () => {
      expect(checkNetworkPolicies(objects())).toEqual([]);
    });

    it('the store\'s memory, startup probe, grace period and snapshot volume cover its MAX_MEMORY_BYTES', () => {
      expect(checkStoreSizing(objects())).toEqual([]);
    });

    it('the store password is off, or asked by the store and sent by the backends from one Secret', () => {
      expect(checkStorePassword(objects())).toEqual([]);
    });

    it('the backend finds the shards by the SRV name of the headless Service, which publishes not-ready addresses', () => {
      expect(checkStoreAddress(objects())).toEqual([]);
    });

    it(`every image carries package.json's version (${version})`, () => {
      expect(checkImages(objects(), version)).toEqual([]);
      const images = [storeWorkload(objects())!, backendWorkload(objects())!].map((w) => w.containers[0]!.image);
      // The names deploy/Dockerfile's targets are built as.
      expect(images).toEqual([`kvstack-store:${version}`, `kvstack-backend:${version}`]);
    });

    it('the store\'s environment is one its config loader accepts', () => {
      const store = storeWorkload(objects())!.containers[0]!;
      const env = Object.fromEntries((store.env ?? []).map((e) => [e.name, e.value]));
      // The loader wants the snapshot's directory to exist: the volume's mount point in the
      // pod (checked with the sizing), a directory of this machine here.
      const config = loadStoreConfig({ ...env, STORE_SNAPSHOT_PATH: join(tmpdir(), 'store.snapshot') });
      expect(config.host).toBe('0.0.0.0');
      expect(config.snapshotPath).not.toBe('');
      expect(config.maxMemoryBytes).toBe(renderedSizingInputs(objects()).maxMemoryBytes);
    });

    it('the backend\'s environment is one its config loader accepts, and so is the fixed list the docs give instead', () => {
      const backend = backendWorkload(objects())!.containers[0]!;
      const env = Object.fromEntries((backend.env ?? []).map((e) => [e.name, e.value]));
      const discovered = loadBackendConfig(env).store;
      expect(isDiscovery(discovered) && discovered.kind === 'dnssrv' && discovered.name).toBe(envOf(backend, 'KV_STORE')!.slice('dnssrv+'.length));
      // docs/kubernetes.md#a-fixed-list-instead-of-discovery names each shard by its pod's
      // host name, the name discovery gives it, so the ring stays when KV_STORE switches.
      const listed = loadBackendConfig({ ...env, KV_STORE: fixedStoreList(objects()) }).store;
      expect(isDiscovery(listed) ? [] : listed.map((s) => s.name)).toEqual(['kvstore-0', 'kvstore-1', 'kvstore-2'].map((p) => `${p}.kvstore.kvstack.svc.cluster.local`));
    });
  });

  it('components/store-password makes the store ask for the Secret\'s password and every backend send it, and the result still passes every check', () => {
    const withPassword = renderWithComponent('prometheus-operator', 'store-password');
    expect(checkStorePassword(withPassword)).toEqual([]);
    expect(envOf(storeWorkload(withPassword)!.containers[0]!, 'STORE_PASSWORD_FILE')).toBe('/etc/kvstack/store-password/password');
    expect(envOf(backendWorkload(withPassword)!.containers[0]!, 'KV_STORE_PASSWORD_FILE')).toBe('/etc/kvstack/store-password/password');
    for (const check of [checkContainers, checkSelectorsAndPorts, checkNetworkPolicies, checkStoreSizing, checkStoreAddress]) expect(check(withPassword), check.name).toEqual([]);
    const oneSided = broken(withPassword, kind('Deployment'), (o) => (o.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'store-password').secret.secretName = 'other'));
    expect(checkStorePassword(oneSided)).toEqual(['the store takes its password from kvstack-store-password, the backend from other']);
    const storeOnly = broken(withPassword, kind('Deployment'), (o) => (storeContainer(o).env = storeContainer(o).env.filter((e: { name: string }) => e.name !== 'KV_STORE_PASSWORD_FILE')));
    expect(checkStorePassword(storeOnly)).toEqual(['the store takes its password from kvstack-store-password, the backend from nowhere']);
  });

  it('components/store-tls mounts one kubernetes.io/tls Secret into the store and every backend: the store speaks TLS and requires client certificates, the backends connect with it; with the password component too, and the result still passes every check', () => {
    const secured = renderWithComponent('prometheus-operator', ['store-tls', 'store-password']);
    const store = storeWorkload(secured)!.containers[0]!;
    const backend = backendWorkload(secured)!.containers[0]!;
    const dir = '/etc/kvstack/store-tls';
    expect(['STORE_TLS_CERT_FILE', 'STORE_TLS_KEY_FILE', 'STORE_TLS_CA_FILE', 'STORE_TLS_CLIENT_AUTH'].map((e) => envOf(store, e))).toEqual([`${dir}/tls.crt`, `${dir}/tls.key`, `${dir}/ca.crt`, 'require']);
    expect(['KV_STORE_TLS', 'KV_STORE_TLS_CA_FILE', 'KV_STORE_TLS_CERT_FILE', 'KV_STORE_TLS_KEY_FILE'].map((e) => envOf(backend, e))).toEqual(['true', `${dir}/ca.crt`, `${dir}/tls.crt`, `${dir}/tls.key`]);
    for (const workload of [storeWorkload(secured)!.object, backendWorkload(secured)!.object]) {
      const spec = workload.spec.template.spec;
      expect(spec.volumes.find((v: { name: string }) => v.name === 'store-tls').secret.secretName).toBe('kvstack-store-tls');
      // Mounted as a directory, never subPath: a renewed Secret reaches the files.
      expect(spec.containers[0].volumeMounts.find((m: { name: string }) => m.name === 'store-tls')).toEqual({ name: 'store-tls', mountPath: dir, readOnly: true });
    }
    expect(envOf(store, 'STORE_PASSWORD_FILE')).toBe('/etc/kvstack/store-password/password');
    expect(checkStorePassword(secured)).toEqual([]);
    for (const check of [checkContainers, checkSelectorsAndPorts, checkNetworkPolicies, checkStoreSizing, checkStoreAddress]) expect(check(secured), check.name).toEqual([]);
    // The store settings it sets load (with files standing in for the Secret's), and so do the backend's.
    const f = tlsFixture();
    const files = (v: string | undefined) => v?.replace(`${dir}/tls.crt`, f.server.cert).replace(`${dir}/tls.key`, f.server.key).replace(`${dir}/ca.crt`, f.ca);
    const env = (c: Container) => Object.fromEntries((c.env ?? []).filter((e) => e.name.includes('TLS')).map((e) => [e.name, files(e.value)]));
    expect(loadStoreConfig(env(store)).tls).toMatchObject({ clientAuth: 'require' });
    expect(loadBackendConfig(env(backend)).storeTlsFiles).toBeDefined();
  });

  it('components/backend-https and backend-tokens mount their Secrets into every backend as directories, its settings load, and the result still passes every check', () => {
    const secured = renderWithComponent('prometheus-operator', ['backend-https', 'backend-tokens']);
    const backend = backendWorkload(secured)!.containers[0]!;
    expect(['BACKEND_TLS_CERT_FILE', 'BACKEND_TLS_KEY_FILE', 'BACKEND_TOKENS_FILE'].map((e) => envOf(backend, e))).toEqual([
      '/etc/kvstack/backend-tls/tls.crt',
      '/etc/kvstack/backend-tls/tls.key',
      '/etc/kvstack/backend-tokens/tokens',
    ]);
    const spec = backendWorkload(secured)!.object.spec.template.spec;
    for (const [volume, secret, path] of [['backend-tls', 'kvstack-backend-tls', '/etc/kvstack/backend-tls'], ['backend-tokens', 'kvstack-backend-tokens', '/etc/kvstack/backend-tokens']] as const) {
      expect(spec.volumes.find((v: { name: string }) => v.name === volume).secret.secretName).toBe(secret);
      // Mounted as a directory, never subPath: a renewed Secret reaches the files.
      expect(spec.containers[0].volumeMounts.find((m: { name: string }) => m.name === volume)).toEqual({ name: volume, mountPath: path, readOnly: true });
    }
    for (const check of [checkContainers, checkSelectorsAndPorts, checkNetworkPolicies, checkStoreSizing, checkStoreAddress]) expect(check(secured), check.name).toEqual([]);
    // The settings load, with files standing in for the Secrets'.
    const cert = tlsFixture().issue('kubernetes-backend', { eku: 'serverAuth' });
    const tokens = join(tlsFixture().dir, 'kubernetes-tokens');
    writeFileSync(tokens, 'write kubernetes-write-token-0123456789\n');
    const stand = (v: string | undefined) => v?.replace('/etc/kvstack/backend-tls/tls.crt', cert.cert).replace('/etc/kvstack/backend-tls/tls.key', cert.key).replace('/etc/kvstack/backend-tokens/tokens', tokens);
    const env = Object.fromEntries((backend.env ?? []).filter((e) => e.name.startsWith('BACKEND_T')).map((e) => [e.name, stand(e.value)]));
    expect(loadBackendConfig(env)).toMatchObject({ tlsCertFile: cert.cert, tokensFile: tokens });
  });

  it('the stated RSS bound is what the limit is held to: 1.5 x MAX_MEMORY_BYTES + 200 MiB', () => {
    const inputs = renderedSizingInputs(operator);
    expect(storeSizing(inputs).rssBoundBytes).toBe(storeRssBoundBytes(inputs.maxMemoryBytes));
    expect(storeRssBoundBytes(256 * 1024 * 1024)).toBe(584 * 1024 * 1024);
  });

  it('the PrometheusRule holds exactly the rules of alert-rules.yml', () => {
    const rule = operator.find(kind('PrometheusRule'))!;
    expect(rule.spec.groups).toEqual((parse(readRepoFile('alert-rules.yml')) as { groups: unknown }).groups);
  });

  it('the dashboard ConfigMap holds exactly each dashboard JSON, labelled for Grafana\'s sidecar', () => {
    const cm = operator.find((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1')!;
    expect(cm, 'a ConfigMap labelled grafana_dashboard: "1"').toBeDefined();
    const files = readdirSync(repoFile('grafana/dashboards')).filter((f) => f.endsWith('.json'));
    expect(Object.keys(cm.data ?? {}).sort()).toEqual(files.sort());
    for (const f of files) expect(cm.data![f], f).toBe(readFileSync(repoFile(`grafana/dashboards/${f}`), 'utf8'));
  });

  it('ServiceMonitors scrape both admin ports under the job names the alerts select on', () => {
    const monitors = operator.filter(kind('ServiceMonitor'));
    const scraped = monitors.flatMap((m) =>
      operator
        .filter((s) => s.kind === 'Service' && Object.entries(m.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v))
        .map((s) => `${s.metadata.labels?.[m.spec.jobLabel]}:${m.spec.endpoints.map((e: { port: string }) => e.port).join(',')}`),
    );
    expect(scraped.sort()).toEqual(['kvbackend:admin', 'kvstore:admin']);
  });

  describe('each check fails on a manifest broken on purpose', () => {
    it('a container without its liveness probe, memory limit or read-only root', () => {
      const noProbe = broken(operator, kind('StatefulSet'), (o) => delete storeContainer(o).livenessProbe);
      expect(checkContainers(noProbe)).toEqual([expect.stringMatching(/container store: no livenessProbe/)]);
      const noLimit = broken(operator, kind('Deployment'), (o) => delete storeContainer(o).resources.limits.memory);
      expect(checkContainers(noLimit)).toEqual([expect.stringMatching(/container backend: no memory limit/)]);
      const writable = broken(operator, kind('Deployment'), (o) => (storeContainer(o).securityContext.readOnlyRootFilesystem = false));
      expect(checkContainers(writable)).toEqual([expect.stringMatching(/root filesystem is not read-only/)]);
      const root = broken(operator, kind('StatefulSet'), (o) => delete o.spec.template.spec.securityContext.runAsUser);
      expect(checkContainers(root)).toEqual([expect.stringMatching(/numeric non-root user/)]);
    });

    it('a Service, a PDB, a probe or a ServiceMonitor that points at nothing', () => {
      const svc = broken(operator, kind('Service', 'kvbackend'), (o) => (o.spec.selector = { 'app.kubernetes.io/name': 'kvbackend-typo' }));
      expect(checkSelectorsAndPorts(svc)).toContain('Service kvbackend selects no pods');
      const pdb = broken(operator, kind('PodDisruptionBudget', 'kvstore'), (o) => (o.spec.selector.matchLabels = { app: 'kvstore' }));
      expect(checkSelectorsAndPorts(pdb)).toEqual(['PodDisruptionBudget kvstore selects no pods']);
      const probe = broken(operator, kind('StatefulSet'), (o) => (storeContainer(o).readinessProbe.httpGet.port = 'metrics'));
      expect(checkSelectorsAndPorts(probe)).toEqual([expect.stringMatching(/readinessProbe uses port metrics/)]);
      const monitor = broken(operator, kind('ServiceMonitor', 'kvstore'), (o) => (o.spec.endpoints[0].port = 'metrics'));
      expect(checkSelectorsAndPorts(monitor)).toEqual(['ServiceMonitor kvstore: endpoint port metrics is no port of the Services it selects']);
      const renamed = broken(operator, kind('Service', 'kvstore'), (o) => (o.spec.ports[1].targetPort = 'metrics'));
      expect(checkSelectorsAndPorts(renamed)).toContain('Service kvstore: port admin targets metrics, which no selected container port is named');
    });

    it('a store port open to another peer, or an admin port closed to Prometheus', () => {
      const open = broken(operator, kind('NetworkPolicy', 'kvstore'), (o) => delete o.spec.ingress[0].from);
      expect(checkNetworkPolicies(open)).toEqual(['NetworkPolicy kvstore: the store port is open to everyone']);
      const wider = broken(operator, kind('NetworkPolicy', 'kvstore'), (o) => o.spec.ingress[0].from.push({ namespaceSelector: {} }));
      expect(checkNetworkPolicies(wider)).toEqual(['NetworkPolicy kvstore: the store port is open to a peer other than the backend\'s pods']);
      const allPorts = broken(operator, kind('NetworkPolicy', 'kvstore'), (o) => delete o.spec.ingress[1].ports);
      expect(checkNetworkPolicies(allPorts)).toContain('NetworkPolicy kvstore: the store port is open to a peer other than the backend\'s pods');
      const closed = broken(operator, kind('NetworkPolicy', 'kvbackend'), (o) => o.spec.ingress.pop());
      expect(checkNetworkPolicies(closed)).toEqual(['Prometheus cannot reach the backend\'s admin port']);
    });

    it('a memory limit under the bound, a short startup probe or grace period, a snapshot off its volume', () => {
      const capRaised = broken(operator, kind('StatefulSet'), (o) => (storeContainer(o).env.find((e: { name: string }) => e.name === 'MAX_MEMORY_BYTES').value = String(1024 ** 3)));
      const violations = checkStoreSizing(capRaised);
      expect(violations).toEqual(
        expect.arrayContaining([expect.stringMatching(/memory limit .* is below its RSS bound/), expect.stringMatching(/startup probe allows/), expect.stringMatching(/grace period/)]),
      );
      const lowRequest = broken(operator, kind('StatefulSet'), (o) => (storeContainer(o).resources.requests.memory = '256Mi'));
      expect(checkStoreSizing(lowRequest)).toEqual([expect.stringMatching(/request .* differs from its limit/)]);
      const offVolume = broken(operator, kind('StatefulSet'), (o) => (storeContainer(o).env.find((e: { name: string }) => e.name === 'STORE_SNAPSHOT_PATH').value = '/tmp/store.snapshot'));
      expect(checkStoreSizing(offVolume)).toEqual(['STORE_SNAPSHOT_PATH /tmp/store.snapshot is not on a volume claimed per shard']);
      // More backends, more large values in flight on each shard.
      const moreBackends = broken(operator, kind('HorizontalPodAutoscaler'), (o) => (o.spec.maxReplicas = 100));
      expect(checkStoreSizing(moreBackends)).toEqual([expect.stringMatching(/leaves no room for 400 connections/)]);
    });

    it('a KV_STORE naming another Service or namespace, a Service that hides not-ready shards', () => {
      const moved = broken(operator, kind('Service', 'kvstore'), (o) => (o.metadata.namespace = 'elsewhere'));
      expect(checkStoreAddress(moved)).toEqual([expect.stringMatching(/KV_STORE is dnssrv\+_store\._tcp\.kvstore\.kvstack\..*, not .*\.kvstore\.elsewhere\./)]);
      const hidden = broken(operator, kind('Service', 'kvstore'), (o) => (o.spec.publishNotReadyAddresses = false));
      expect(checkStoreAddress(hidden)).toEqual([expect.stringMatching(/does not publish not-ready addresses/)]);
    });

    it('an image on a moving tag', () => {
      const latest = broken(operator, kind('Deployment'), (o) => (storeContainer(o).image = 'kvstack-backend:latest'));
      expect(checkImages(latest, version)).toEqual([expect.stringMatching(/image kvstack-backend:latest is not tagged/)]);
    });
  });

  it('keeps the store and the backend on the same MAX_VALUE_BYTES (a larger store value is a 502 at the backend)', () => {
    for (const objects of rendered.values()) {
      expect(envOf(backendWorkload(objects)!.containers[0]!, 'MAX_VALUE_BYTES')).toBe(envOf(storeWorkload(objects)!.containers[0]!, 'MAX_VALUE_BYTES'));
    }
  });
});
