// The dashboards' own rules (grafana/dashboard-lint.ts), offline: every committed dashboard
// JSON keeps them, and each rule fails a copy broken on purpose, naming the panel.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Dashboard, Panel } from '../grafana/dashboard-builder.ts';
import { formatProblem, lintDashboard, rangesIn, type LintRule } from '../grafana/dashboard-lint.ts';
import { dashboardsDir } from '../grafana/generate-dashboards.ts';

const files = readdirSync(dashboardsDir).filter((f) => f.endsWith('.json'));
const load = (file: string): Dashboard => JSON.parse(readFileSync(dashboardsDir + file, 'utf8')) as Dashboard;

interface Target {
  refId: string;
  expr: string;
  datasource?: { type?: string; uid?: string };
}
const drawing = (d: Dashboard): Panel[] => (d.panels ?? []).filter((p) => p.type !== 'row') as Panel[];
const targets = (p: Panel): Target[] => p.targets as unknown as Target[];
/** The first panel whose query matches, with that query. */
function panelWith(d: Dashboard, test: (expr: string) => boolean): { panel: Panel; target: Target } {
  for (const panel of drawing(d)) for (const target of targets(panel)) if (test(target.expr)) return { panel, target };
  throw new Error('no panel with such a query');
}
const rulesOf = (d: Dashboard): LintRule[] => [...new Set(lintDashboard(d).map((p) => p.rule))];

describe('the committed dashboards keep the dashboard rules', () => {
  it('there are dashboards to check', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s', (file) => {
    const d = load(file);
    expect(lintDashboard(d).map(formatProblem)).toEqual([]);
    // What the rules rest on is there: a datasource variable, and rates to check.
    expect(d.templating.list?.some((v) => v.type === 'datasource')).toBe(true);
    expect(drawing(d).flatMap(targets).filter((t) => /\b(rate|irate|increase)\(/.test(t.expr)).length).toBeGreaterThan(10);
  });
});

describe.each(files)('each rule fails %s broken on purpose', (file) => {
  const broken = (): Dashboard => load(file);

  it('datasource: no datasource variable', () => {
    const d = broken();
    d.templating.list = d.templating.list!.filter((v) => v.type !== 'datasource');
    const problems = lintDashboard(d);
    expect(problems.map(formatProblem)).toContain('datasource: dashboard: no datasource variable (type datasource, query prometheus)');
    // Every panel and query variable then reads from nothing the dashboard defines.
    expect(problems.filter((p) => p.where.startsWith('panel ')).length).toBeGreaterThanOrEqual(drawing(d).length);
  });

  it('datasource: a datasource variable that does not start on the default datasource', () => {
    const d = broken();
    const v = d.templating.list!.find((v) => v.type === 'datasource')!;
    delete v.current;
    expect(lintDashboard(d).map(formatProblem)).toEqual([`datasource: variable ${v.name}: does not start on "default" (current: {text: "default", value: "default"})`]);
  });

  it('datasource: a query pinned to a datasource uid', () => {
    const d = broken();
    const { panel, target } = panelWith(d, () => true);
    target.datasource = { type: 'prometheus', uid: 'kvstack-prometheus' };
    expect(lintDashboard(d).map(formatProblem)).toEqual([`datasource: panel "${panel.title}": query ${target.refId} reads datasource kvstack-prometheus, not \${datasource}`]);
  });

  it('datasource: a panel pinned to a datasource uid, and a query with none', () => {
    const d = broken();
    const panel = drawing(d)[1]!;
    panel.datasource = { type: 'prometheus', uid: 'kvstack-prometheus' };
    delete targets(panel)[0]!.datasource;
    expect(lintDashboard(d).map(formatProblem)).toEqual([
      `datasource: panel "${panel.title}": reads datasource kvstack-prometheus, not \${datasource}`,
      `datasource: panel "${panel.title}": query A reads no datasource, not \${datasource}`,
    ]);
  });

  it('datasource: a query variable pinned to a datasource uid', () => {
    const d = broken();
    const v = d.templating.list!.find((v) => v.type === 'query')!;
    v.datasource = { type: 'prometheus', uid: 'kvstack-prometheus' };
    expect(lintDashboard(d).map(formatProblem)).toEqual([`datasource: variable ${v.name}: reads datasource kvstack-prometheus, not \${datasource}`]);
  });

  it('window: rate() over a fixed window', () => {
    const d = broken();
    const { panel, target } = panelWith(d, (e) => e.startsWith('sum(rate('));
    target.expr = target.expr.replace('[$__rate_interval]', '[5m]');
    expect(lintDashboard(d).map(formatProblem)).toEqual([`window: panel "${panel.title}": query ${target.refId}: rate() over [5m], not [$__rate_interval]`]);
  });

  it('window: increase() and irate() over fixed windows, inside histogram_quantile', () => {
    const d = broken();
    const { panel, target } = panelWith(d, (e) => e.startsWith('histogram_quantile('));
    target.expr = target.expr.replace('rate(', 'increase(').replace('[$__rate_interval]', '[1h]');
    targets(panel).push({ ...target, refId: 'Z', expr: 'sum(irate(kvstore_keys{job=~"$job",instance=~"$instance"}[30s]))' });
    expect(lintDashboard(d).map(formatProblem)).toEqual([
      `window: panel "${panel.title}": query ${target.refId}: increase() over [1h], not [$__rate_interval]`,
      `window: panel "${panel.title}": query Z: irate() over [30s], not [$__rate_interval]`,
    ]);
  });

  it('window: a fixed window outside the rate functions, and in a subquery', () => {
    const d = broken();
    const { panel, target } = panelWith(d, (e) => e.startsWith('sum(rate('));
    target.expr = `max_over_time(${target.expr}[10m:1m])`;
    expect(lintDashboard(d).map(formatProblem)).toEqual([`window: panel "${panel.title}": query ${target.refId}: a fixed window [10m] in max_over_time(): use one of Grafana's intervals`]);
  });

  it('unit: a panel without a unit', () => {
    const d = broken();
    const panel = drawing(d)[2]!;
    delete panel.fieldConfig!.defaults.unit;
    expect(lintDashboard(d).map(formatProblem)).toEqual([`unit: panel "${panel.title}": no unit`]);
  });

  it('description: panels with no or a blank description', () => {
    const d = broken();
    const [a, b] = drawing(d).slice(3, 5);
    delete a!.description;
    b!.description = '  ';
    expect(lintDashboard(d).map(formatProblem)).toEqual([`description: panel "${a!.title}": no description`, `description: panel "${b!.title}": no description`]);
  });

  it('a collapsed row\'s panels are checked too', () => {
    const d = broken();
    const rows = (d.panels ?? []).filter((p) => p.type === 'row') as { panels: Panel[]; collapsed?: boolean }[];
    const last = rows[rows.length - 1]!;
    const tucked = drawing(d).slice(-2);
    delete tucked[0]!.description;
    last.collapsed = true;
    last.panels = tucked;
    d.panels = d.panels!.filter((p) => !tucked.includes(p as Panel));
    expect(rulesOf(d)).toEqual(['description']);
  });
});

describe('ranges and the function they are given to', () => {
  it('finds each range with its innermost function, ignoring brackets in strings', () => {
    expect(rangesIn('histogram_quantile(0.99, sum by (le) (rate(x_bucket{a=~"[0-9]+"}[$__rate_interval])))')).toEqual([{ range: '$__rate_interval', fn: 'rate' }]);
    expect(rangesIn('sum by (le) (x[5m])')).toEqual([{ range: '5m', fn: undefined }]);
    expect(rangesIn('max_over_time(rate(x[1m])[1h:5m])')).toEqual([
      { range: '1m', fn: 'rate' },
      { range: '1h', fn: 'max_over_time' },
    ]);
    expect(rangesIn('time() - x or on() vector(0)')).toEqual([]);
  });
});
