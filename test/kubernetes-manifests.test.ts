// The Kubernetes manifests, without a cluster: every overlay renders with kubectl's
// kustomize, every rendered object validates against the Kubernetes API schemas and the
// Prometheus Operator's CRD schemas (the validators kubernetes-models and
// @kubernetes-models/prometheus-operator generate from them, installed with the other
// dev dependencies: nothing is downloaded here), and the generated files are up to date.
// The schemas accept fields they do not know (a misspelt livenessProbe passes them): the
// policy suite, test/kubernetes-policy.test.ts, checks the fields the stack relies on.
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { staleGenerated } from '../deploy/kubernetes/generate.ts';
import { describeKubectl, overlays, renderOverlay, type K8sObject } from './helpers/kubernetes-manifests.ts';
import { repoRoot } from './helpers/observability-sources.ts';

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: unknown) => Validatable;

/** The generated model of an object's apiVersion and kind, from the npm packages. */
async function modelOf(o: { apiVersion: string; kind: string }): Promise<ModelClass> {
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : ['', o.apiVersion];
  const path =
    group === 'monitoring.coreos.com'
      ? `@kubernetes-models/prometheus-operator/${group}/${version}/${o.kind}`
      : `kubernetes-models/${group ? `${group}/` : ''}${version}/${o.kind}`;
  const mod = (await import(path)) as Record<string, ModelClass>;
  const model = mod[o.kind];
  if (!model) throw new Error(`${path} exports no ${o.kind}`);
  return model;
}

/** The schema errors of an object, or '' when it is valid. */
async function schemaErrors(o: K8sObject): Promise<string> {
  try {
    new (await modelOf(o))(o).validate();
    return '';
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

describe('generated Kubernetes files', () => {
  it('are up to date with their sources (the store sizing, package.json, alert-rules.yml, the dashboards)', () => {
    expect(staleGenerated(), 'run npm run k8s').toEqual([]);
  });

  it('pass the generator\'s --check, the command a CI step or a hook runs', () => {
    const ok = spawnSync(process.execPath, ['deploy/kubernetes/generate.ts', '--check'], { cwd: repoRoot, encoding: 'utf8' });
    expect(ok.status, ok.stderr).toBe(0);
  });
});

describeKubectl('kustomize overlays', () => {
  const rendered = new Map<string, K8sObject[]>();
  beforeAll(() => {
    for (const overlay of overlays()) rendered.set(overlay, renderOverlay(overlay));
  });

  it('include a plain overlay and one for the Prometheus Operator', () => {
    expect(overlays()).toEqual(expect.arrayContaining(['plain', 'prometheus-operator']));
  });

  it.each(overlays())('%s renders, every object in one namespace', (overlay) => {
    const objects = rendered.get(overlay)!;
    expect(objects.length).toBeGreaterThan(5);
    const namespaced = objects.filter((o) => o.kind !== 'Namespace');
    const namespaces = new Set(namespaced.map((o) => o.metadata.namespace));
    expect([...namespaces]).toHaveLength(1);
    expect(objects.find((o) => o.kind === 'Namespace')?.metadata.name).toBe([...namespaces][0]);
  });

  it.each(overlays())('%s: every object validates against its API or CRD schema', async (overlay) => {
    const errors: string[] = [];
    for (const o of rendered.get(overlay)!) {
      const e = await schemaErrors(o);
      if (e) errors.push(`${o.kind} ${o.metadata.name}: ${e}`);
    }
    expect(errors).toEqual([]);
  });

  it('the operator overlay holds the monitoring objects the plain one does not', () => {
    const kinds = (overlay: string) => new Set(rendered.get(overlay)!.map((o) => o.kind));
    for (const kind of ['ServiceMonitor', 'PrometheusRule', 'ConfigMap']) {
      expect(kinds('prometheus-operator')).toContain(kind);
      expect(kinds('plain')).not.toContain(kind);
    }
  });

  it('schema validation rejects what the API server would: a port number as a string, a missing selector, a bad CRD field', async () => {
    const objects = rendered.get('prometheus-operator')!;
    const broken = (kind: string, edit: (o: K8sObject) => void): K8sObject => {
      const o = structuredClone(objects.find((x) => x.kind === kind)!);
      edit(o);
      return o;
    };
    expect(await schemaErrors(broken('StatefulSet', (o) => (o.spec.template.spec.containers[0].ports[0].containerPort = '8765')))).toMatch(/containerPort must be integer/);
    expect(await schemaErrors(broken('Deployment', (o) => delete o.spec.selector))).toMatch(/selector/);
    expect(await schemaErrors(broken('ServiceMonitor', (o) => (o.spec.endpoints[0].scheme = 'gopher')))).toMatch(/scheme/);
    expect(await schemaErrors(broken('PrometheusRule', (o) => (o.spec.groups[0].rules[0].for = 'a minute')))).toMatch(/for/);
  });
});
