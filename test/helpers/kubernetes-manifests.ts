// Renders the kustomize overlays of deploy/kubernetes with `kubectl kustomize` (no cluster:
// kustomize is built into kubectl) and checks the rendered objects the way a reviewer
// would by hand. Each check returns its violations as sentences, so a test can show
// them and a test of the check itself can break a manifest and expect its sentence.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseQuantity, storeSizing, DRAIN_SECONDS, START_SECONDS, type SizingInputs } from '../../deploy/kubernetes/store-sizing.ts';
import { repoFile } from './observability-sources.ts';

/** kubectl is required (a missing one fails the suites instead of skipping them) under CI=true or REQUIRE_KUBECTL=1. */
export const kubectlRequired = process.env.CI === 'true' || process.env.REQUIRE_KUBECTL === '1';

/** The kustomize version built into kubectl on PATH ("v5.5.0"), or undefined without a usable kubectl. */
export function kubectlKustomizeVersion(): string | undefined {
  const r = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  try {
    return (JSON.parse(r.stdout) as { kustomizeVersion?: string }).kustomizeVersion;
  } catch {
    return undefined;
  }
}

/** kustomize features the overlays use (replacements with a delimiter, labels without selectors) need kustomize 5. */
const MIN_KUSTOMIZE_MAJOR = 5;

/**
 * `describe` for a suite that renders the overlays. With a kubectl whose kustomize is recent
 * enough it is a plain describe; without one the suite is skipped and a line says so, and
 * where kubectl is required it becomes one failing test that says why.
 */
export function describeKubectl(name: string, fn: () => void): void {
  const version = kubectlKustomizeVersion();
  const major = Number(/^v?(\d+)/.exec(version ?? '')?.[1] ?? 0);
  if (major >= MIN_KUSTOMIZE_MAJOR) {
    describe(name, fn);
    return;
  }
  const reason = version ? `kubectl's kustomize is ${version}, older than v${MIN_KUSTOMIZE_MAJOR}` : "no 'kubectl' on PATH";
  if (kubectlRequired) {
    describe(name, () => {
      it('has the kubectl it needs (CI=true or REQUIRE_KUBECTL=1)', () => {
        throw new Error(`kubectl is required here but ${reason} (.ci/kubectl.sh installs one)`);
      });
    });
    return;
  }
  console.log(`SKIPPED "${name}" — ${reason} (CI=true or REQUIRE_KUBECTL=1 makes this a failure; Debian trixie's kubectl package has it)`);
  describe.skip(name, fn);
}

/** The overlays a user can apply: every directory under deploy/kubernetes/overlays. */
export const overlays = (): string[] =>
  readdirSync(repoFile('deploy/kubernetes/overlays'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // The rendered YAML, read without a schema: the checks below look into it field by field.
  spec?: any;
  data?: Record<string, string>;
}

/** `kubectl kustomize` of an overlay, parsed. Throws with kubectl's message when it fails. */
export function renderOverlay(overlay: string): K8sObject[] {
  const r = spawnSync('kubectl', ['kustomize', repoFile(`deploy/kubernetes/overlays/${overlay}`)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`kubectl kustomize deploy/kubernetes/overlays/${overlay} failed: ${r.stderr || r.error}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject);
}

/**
 * An overlay rendered with one or more of deploy/kubernetes/components added, as a user's
 * overlay that lists them would be: a kustomization in a temporary directory, pointing back here.
 */
export function renderWithComponent(overlay: string, component: string | readonly string[]): K8sObject[] {
  const components = typeof component === 'string' ? [component] : component;
  const dir = mkdtempSync(join(tmpdir(), 'kvstack-kustomize-'));
  try {
    const from = (path: string): string => relative(dir, repoFile(path));
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      `resources:\n  - ${from(`deploy/kubernetes/overlays/${overlay}`)}\ncomponents:\n${components.map((c) => `  - ${from(`deploy/kubernetes/components/${c}`)}\n`).join('')}`,
    );
    const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`kubectl kustomize of ${overlay} with components/${components.join(', ')} failed: ${r.stderr || r.error}`);
    return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the objects' parts

interface Probe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
}
export interface Container {
  name: string;
  image: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { allowPrivilegeEscalation?: boolean; readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string }[];
}
export interface Workload {
  object: K8sObject;
  labels: Record<string, string>;
  containers: Container[];
  podSpec: any;
}

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job']);

export const workloads = (objects: K8sObject[]): Workload[] =>
  objects
    .filter((o) => WORKLOAD_KINDS.has(o.kind))
    .map((o) => ({ object: o, labels: o.spec.template.metadata?.labels ?? {}, containers: o.spec.template.spec.containers, podSpec: o.spec.template.spec }));

export const named = (objects: K8sObject[], kind: string, name: string): K8sObject | undefined => objects.find((o) => o.kind === kind && o.metadata.name === name);

export const envOf = (c: Container, name: string): string | undefined => c.env?.find((e) => e.name === name)?.value;

const where = (o: K8sObject): string => `${o.kind} ${o.metadata.name}`;

/** The workloads whose pods a label selector ({matchLabels} or a Service's plain map) selects. */
function selected(objects: K8sObject[], selector: Record<string, string> | undefined): Workload[] {
  if (!selector || Object.keys(selector).length === 0) return [];
  return workloads(objects).filter((w) => Object.entries(selector).every(([k, v]) => w.labels[k] === v));
}

/** matchLabels of a LabelSelector; matchExpressions are not used here and count as a violation. */
function matchLabels(where: string, selector: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] } | undefined, out: string[]): Record<string, string> | undefined {
  if (selector?.matchExpressions?.length) out.push(`${where}: matchExpressions are not checked here; use matchLabels`);
  return selector?.matchLabels;
}

const containerPortNames = (ws: Workload[]): Set<string> => new Set(ws.flatMap((w) => w.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name ?? ''))));

// ---- the checks

/** Probes, requests and limits, and SPEC §9's security context, on every container. */
export function checkContainers(objects: K8sObject[]): string[] {
  const out: string[] = [];
  for (const w of workloads(objects)) {
    const pod = w.podSpec.securityContext ?? {};
    if (pod.runAsNonRoot !== true) out.push(`${where(w.object)}: the pod does not set runAsNonRoot: true`);
    if (!(pod.runAsUser > 0)) out.push(`${where(w.object)}: the pod does not run as a numeric non-root user (runAsUser)`);
    if (pod.seccompProfile?.type !== 'RuntimeDefault') out.push(`${where(w.object)}: the pod's seccompProfile is not RuntimeDefault`);
    const volumes = new Map<string, unknown>((w.podSpec.volumes ?? []).map((v: { name: string }) => [v.name, v]));
    const claims = new Set<string>((w.object.spec.volumeClaimTemplates ?? []).map((t: K8sObject) => t.metadata.name));
    for (const c of w.containers) {
      const at = `${where(w.object)} container ${c.name}`;
      for (const p of ['livenessProbe', 'readinessProbe'] as const) if (!c[p]) out.push(`${at}: no ${p}`);
      for (const r of ['cpu', 'memory']) {
        if (!c.resources?.requests?.[r]) out.push(`${at}: no ${r} request`);
        if (!c.resources?.limits?.[r]) out.push(`${at}: no ${r} limit`);
      }
      const sc = c.securityContext ?? {};
      if (sc.allowPrivilegeEscalation !== false) out.push(`${at}: allowPrivilegeEscalation is not false`);
      if (sc.readOnlyRootFilesystem !== true) out.push(`${at}: the root filesystem is not read-only`);
      if (!sc.capabilities?.drop?.includes('ALL')) out.push(`${at}: capabilities are not all dropped`);
      if (sc.runAsNonRoot === false) out.push(`${at}: runAsNonRoot: false`);
      // With a read-only root, whatever is written goes to an emptyDir or a claimed volume.
      for (const m of c.volumeMounts ?? []) {
        const v = volumes.get(m.name) as { emptyDir?: unknown; secret?: unknown; configMap?: unknown } | undefined;
        if (!claims.has(m.name) && !v?.emptyDir && !v?.secret && !v?.configMap) out.push(`${at}: ${m.mountPath} is not an emptyDir, a Secret, a ConfigMap or a claimed volume`);
      }
    }
  }
  return out;
}

/** Every Service, PodDisruptionBudget, NetworkPolicy and HPA points at something that exists, by names and ports. */
export function checkSelectorsAndPorts(objects: K8sObject[]): string[] {
  const out: string[] = [];
  for (const w of workloads(objects)) {
    for (const c of w.containers) {
      const names = containerPortNames([w]);
      for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
        const port = c[p]?.httpGet?.port;
        if (typeof port === 'string' && !names.has(port)) out.push(`${where(w.object)} container ${c.name}: ${p} uses port ${port}, which no container port is named`);
        if (typeof port === 'number') out.push(`${where(w.object)} container ${c.name}: ${p} uses port number ${port}; name it`);
      }
    }
    if (w.object.kind === 'StatefulSet') {
      const svc = named(objects, 'Service', w.object.spec.serviceName);
      if (!svc) out.push(`${where(w.object)}: its serviceName ${w.object.spec.serviceName} is no Service here`);
      else if (svc.spec.clusterIP !== 'None') out.push(`${where(w.object)}: its governing Service ${svc.metadata.name} is not headless`);
    }
    const sel = matchLabels(where(w.object), w.object.spec.selector, out);
    if (!sel || !Object.entries(sel).every(([k, v]) => w.labels[k] === v)) out.push(`${where(w.object)}: its selector does not select its own pod template`);
  }
  for (const svc of objects.filter((o) => o.kind === 'Service')) {
    const pods = selected(objects, svc.spec.selector);
    if (pods.length === 0) out.push(`${where(svc)} selects no pods`);
    const names = containerPortNames(pods);
    for (const p of svc.spec.ports ?? []) {
      if (!p.name) out.push(`${where(svc)}: port ${p.port} has no name`);
      if (typeof p.targetPort !== 'string') out.push(`${where(svc)}: port ${p.name} targets a number, not a container port name`);
      else if (!names.has(p.targetPort)) out.push(`${where(svc)}: port ${p.name} targets ${p.targetPort}, which no selected container port is named`);
    }
  }
  for (const pdb of objects.filter((o) => o.kind === 'PodDisruptionBudget')) {
    if (selected(objects, matchLabels(where(pdb), pdb.spec.selector, out)).length === 0) out.push(`${where(pdb)} selects no pods`);
  }
  for (const np of objects.filter((o) => o.kind === 'NetworkPolicy')) {
    const pods = selected(objects, matchLabels(where(np), np.spec.podSelector, out));
    if (pods.length === 0) out.push(`${where(np)} selects no pods`);
    const names = containerPortNames(pods);
    for (const rule of np.spec.ingress ?? []) {
      for (const p of rule.ports ?? []) if (typeof p.port === 'string' && !names.has(p.port)) out.push(`${where(np)}: port ${p.port} is no container port of the pods it selects`);
      for (const peer of rule.from ?? []) {
        // A peer in this namespace (no namespaceSelector) must be pods that exist here.
        if (peer.podSelector && !peer.namespaceSelector && selected(objects, matchLabels(where(np), peer.podSelector, out)).length === 0) {
          out.push(`${where(np)}: a peer selects no pods here`);
        }
      }
    }
  }
  for (const hpa of objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const ref = hpa.spec.scaleTargetRef;
    if (!named(objects, ref.kind, ref.name)) out.push(`${where(hpa)} scales ${ref.kind} ${ref.name}, which is not here`);
  }
  for (const sm of objects.filter((o) => o.kind === 'ServiceMonitor')) {
    const services = objects.filter((o) => o.kind === 'Service' && Object.entries(matchLabels(where(sm), sm.spec.selector, out) ?? { '': '' }).every(([k, v]) => o.metadata.labels?.[k] === v));
    if (services.length === 0) out.push(`${where(sm)} selects no Service`);
    for (const e of sm.spec.endpoints ?? []) {
      if (!services.some((s) => (s.spec.ports ?? []).some((p: { name?: string }) => p.name === e.port))) out.push(`${where(sm)}: endpoint port ${e.port} is no port of the Services it selects`);
    }
    if (sm.spec.jobLabel && !services.every((s) => s.metadata.labels?.[sm.spec.jobLabel])) out.push(`${where(sm)}: a Service lacks its jobLabel ${sm.spec.jobLabel}`);
  }
  return out;
}

/** The store's pods: the workload whose container runs the store image. */
export const storeWorkload = (objects: K8sObject[]): Workload | undefined => workloads(objects).find((w) => w.containers.some((c) => /kvstack-store:/.test(c.image)));
export const backendWorkload = (objects: K8sObject[]): Workload | undefined => workloads(objects).find((w) => w.containers.some((c) => /kvstack-backend:/.test(c.image)));

/** The store's Service port by name: the one targeting the container port carrying STORE_PORT / STORE_METRICS_PORT. */
function containerPortName(w: Workload, envName: string): string | undefined {
  const c = w.containers[0]!;
  const port = Number(envOf(c, envName));
  return c.ports?.find((p) => p.containerPort === port)?.name;
}

/** Only the backend reaches the store's port; Prometheus reaches both admin ports. */
export function checkNetworkPolicies(objects: K8sObject[]): string[] {
  const out: string[] = [];
  const store = storeWorkload(objects);
  const backend = backendWorkload(objects);
  if (!store || !backend) return ['the store or the backend workload is missing'];
  const policiesOf = (w: Workload): K8sObject[] =>
    objects.filter(
      (o) => o.kind === 'NetworkPolicy' && selected(objects, o.spec.podSelector?.matchLabels).some((p) => p.object === w.object) && (o.spec.policyTypes ?? ['Ingress']).includes('Ingress'),
    );
  const storePort = containerPortName(store, 'STORE_PORT');
  const checks: [Workload, string | undefined, string][] = [
    [store, containerPortName(store, 'STORE_METRICS_PORT'), 'the store'],
    [backend, containerPortName(backend, 'BACKEND_METRICS_PORT'), 'the backend'],
  ];
  const storePolicies = policiesOf(store);
  if (storePolicies.length === 0) out.push('no NetworkPolicy restricts ingress to the store');
  for (const np of storePolicies) {
    for (const rule of np.spec.ingress ?? []) {
      const ports: (string | number)[] = (rule.ports ?? []).map((p: { port?: string | number }) => p.port);
      const coversStorePort = ports.length === 0 || ports.includes(storePort!) || ports.includes(8765);
      if (!coversStorePort) continue;
      const peers = rule.from ?? [];
      if (peers.length === 0) out.push(`${where(np)}: the store port is open to everyone`);
      for (const peer of peers) {
        const pods = peer.podSelector ? selected(objects, peer.podSelector.matchLabels) : [];
        if (peer.namespaceSelector || peer.ipBlock || !peer.podSelector || pods.length === 0 || pods.some((p) => p.object !== backend.object)) {
          out.push(`${where(np)}: the store port is open to a peer other than the backend's pods`);
        }
      }
    }
  }
  for (const [w, adminPort, what] of checks) {
    const open = policiesOf(w).some((np) =>
      (np.spec.ingress ?? []).some(
        (rule: { ports?: { port: string }[]; from?: { podSelector?: { matchLabels?: Record<string, string> } }[] }) =>
          (rule.ports ?? []).some((p) => p.port === adminPort) && (rule.from ?? []).some((peer) => peer.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'prometheus'),
      ),
    );
    if (!open) out.push(`Prometheus cannot reach ${what}'s admin port`);
  }
  return out;
}

/** The sizing inputs as rendered: the store's cap and value size, the backends' connections. */
export function renderedSizingInputs(objects: K8sObject[]): SizingInputs {
  const store = storeWorkload(objects)!.containers[0]!;
  const backend = backendWorkload(objects)!;
  const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name === backend.object.metadata.name);
  const replicas = hpa?.spec.maxReplicas ?? backend.object.spec.replicas ?? 1;
  return {
    maxMemoryBytes: Number(envOf(store, 'MAX_MEMORY_BYTES')),
    maxValueBytes: Number(envOf(store, 'MAX_VALUE_BYTES')),
    storeConnections: Number(envOf(backend.containers[0]!, 'STORE_POOL_SIZE') ?? 4) * replicas,
  };
}

/** Memory, start-up, grace period and snapshot volume of the store against what its cap needs. */
export function checkStoreSizing(objects: K8sObject[]): string[] {
  const out: string[] = [];
  const w = storeWorkload(objects);
  if (!w) return ['no store workload'];
  const c = w.containers[0]!;
  const inputs = renderedSizingInputs(objects);
  if (!(inputs.maxMemoryBytes > 0)) return ['the store sets no MAX_MEMORY_BYTES'];
  const need = storeSizing(inputs);
  const limit = parseQuantity(c.resources?.limits?.memory ?? '0');
  const request = parseQuantity(c.resources?.requests?.memory ?? '0');
  if (limit < need.rssBoundBytes) out.push(`the store's memory limit ${limit} is below its RSS bound ${need.rssBoundBytes} for MAX_MEMORY_BYTES=${inputs.maxMemoryBytes}`);
  if (limit < need.memoryBytes) out.push(`the store's memory limit ${limit} leaves no room for ${inputs.storeConnections} connections moving large values (${need.memoryBytes} needed)`);
  if (request !== limit) out.push(`the store's memory request ${request} differs from its limit ${limit}: a shard using more than it requested is among the first evicted under memory pressure`);
  const startup = c.startupProbe;
  const startupBudget = (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3);
  if (startupBudget < START_SECONDS + need.loadSeconds) out.push(`the store's startup probe allows ${startupBudget} s, under the ${Math.ceil(START_SECONDS + need.loadSeconds)} s its largest snapshot may take to load`);
  const grace = w.podSpec.terminationGracePeriodSeconds ?? 30;
  if (grace < DRAIN_SECONDS + need.saveSeconds) out.push(`the store's grace period ${grace} s is under the ${Math.ceil(DRAIN_SECONDS + need.saveSeconds)} s its shutdown snapshot may take`);
  const snapshotPath = envOf(c, 'STORE_SNAPSHOT_PATH') ?? '';
  const claims = (w.object.spec.volumeClaimTemplates ?? []) as K8sObject[];
  const mount = (c.volumeMounts ?? []).find((m) => snapshotPath.startsWith(m.mountPath.replace(/\/?$/, '/')));
  const claim = claims.find((t) => t.metadata.name === mount?.name);
  if (!snapshotPath) out.push('the store sets no STORE_SNAPSHOT_PATH');
  else if (!claim) out.push(`STORE_SNAPSHOT_PATH ${snapshotPath} is not on a volume claimed per shard`);
  else if (parseQuantity(claim.spec.resources.requests.storage) < 2 * need.maxSnapshotBytes) out.push(`the snapshot volume is under twice the largest snapshot (${need.maxSnapshotBytes} bytes)`);
  return out;
}

/** KV_STORE is the SRV name of the store's headless Service's named store port, as rendered. */
export function checkStoreAddress(objects: K8sObject[]): string[] {
  const store = storeWorkload(objects);
  const backend = backendWorkload(objects);
  if (!store || !backend) return ['the store or the backend workload is missing'];
  const svc = named(objects, 'Service', store.object.spec.serviceName);
  if (!svc) return [`the store's serviceName ${store.object.spec.serviceName} is no Service`];
  const out: string[] = [];
  if (svc.spec.clusterIP !== 'None') out.push(`${where(svc)} is not headless`);
  if (svc.spec.publishNotReadyAddresses !== true) out.push(`${where(svc)} does not publish not-ready addresses: a restarting shard would leave the ring`);
  const portName = (svc.spec.ports ?? []).find((p: { targetPort: string }) => p.targetPort === containerPortName(store, 'STORE_PORT'))?.name;
  const expected = `dnssrv+_${portName}._tcp.${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local`;
  const actual = envOf(backend.containers[0]!, 'KV_STORE');
  if (actual !== expected) out.push(`the backend's KV_STORE is ${actual}, not ${expected}`);
  return out;
}

/** Every image is tagged with package.json's version, never a moving tag. */
export function checkImages(objects: K8sObject[], version: string): string[] {
  return workloads(objects).flatMap((w) =>
    w.containers.flatMap((c) => {
      const tag = /:([^:/@]+)$/.exec(c.image)?.[1];
      return tag === version ? [] : [`${where(w.object)} container ${c.name}: image ${c.image} is not tagged ${version}`];
    }),
  );
}

/** The Secret a container's password file (its `envName`) is mounted from, or undefined without one. */
function passwordSecret(w: Workload, envName: string): string | undefined | null {
  const c = w.containers[0]!;
  const file = envOf(c, envName);
  if (file === undefined) return undefined;
  const mount = (c.volumeMounts ?? []).find((m) => file.startsWith(m.mountPath.replace(/\/?$/, '/')));
  const volume = (w.podSpec.volumes ?? []).find((v: { name: string }) => v.name === mount?.name);
  return volume?.secret?.secretName ?? null;
}

/** Either the store asks for a password and every backend sends it, both from one Secret, or neither does. */
export function checkStorePassword(objects: K8sObject[]): string[] {
  const store = storeWorkload(objects);
  const backend = backendWorkload(objects);
  if (!store || !backend) return ['the store or the backend workload is missing'];
  const out: string[] = [];
  if (envOf(store.containers[0]!, 'STORE_PASSWORD') || envOf(backend.containers[0]!, 'KV_STORE_PASSWORD')) out.push('a password in a plain variable: use the *_PASSWORD_FILE settings and a Secret');
  const asked = passwordSecret(store, 'STORE_PASSWORD_FILE');
  const sent = passwordSecret(backend, 'KV_STORE_PASSWORD_FILE');
  if (asked === null) out.push("the store's STORE_PASSWORD_FILE is not in a mounted Secret");
  if (sent === null) out.push("the backend's KV_STORE_PASSWORD_FILE is not in a mounted Secret");
  if (asked !== sent && asked !== null && sent !== null) out.push(`the store takes its password from ${asked ?? 'nowhere'}, the backend from ${sent ?? 'nowhere'}`);
  return out;
}
