// The dashboards' own rules, checked on the JSON Grafana loads, with no Grafana running:
//   datasource   a Prometheus datasource variable starting on Grafana's default
//                datasource, and every panel, query and query variable reading from it
//                (so the dashboard works in any Grafana);
//   window       rate(), irate() and increase() over $__rate_interval, and no fixed
//                window anywhere ([5m] shows nothing at a wide zoom's step, or is too
//                short for the scrape interval);
//   unit         a unit on every panel;
//   description  a description on every panel (what the series are, which alert).
// `npm run dashboards` refuses to write a dashboard that breaks one; test/dashboard-lint
// holds the committed JSON to them and shows each rule failing on a dashboard broken on purpose.
import type { Dashboard, Panel } from './dashboard-builder.ts';

export type LintRule = 'datasource' | 'window' | 'unit' | 'description';

export interface LintProblem {
  readonly rule: LintRule;
  /** `panel "<title>"`, `variable <name>` or `dashboard`. */
  readonly where: string;
  readonly message: string;
}

export const formatProblem = (p: LintProblem): string => `${p.rule}: ${p.where}: ${p.message}`;

interface Target {
  readonly refId?: string;
  readonly expr?: unknown;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
}

const RATE_FUNCTIONS = new Set(['rate', 'irate', 'increase']);
const RATE_INTERVAL = new Set(['$__rate_interval', '${__rate_interval}']);
/** Grafana's own intervals: they follow the time range and the scrape interval. */
const GRAFANA_INTERVALS = new Set([...RATE_INTERVAL, '$__interval', '${__interval}', '$__range', '${__range}']);

/** Every panel that draws something: rows left out, the panels of collapsed rows included. */
function panelsOf(d: Dashboard): Panel[] {
  const out: Panel[] = [];
  for (const p of d.panels ?? []) {
    if (p.type === 'row') out.push(...((p as { panels?: Panel[] }).panels ?? []));
    else out.push(p as Panel);
  }
  return out;
}

/** The expression with its string literals blanked, so brackets in a regex are not ranges. */
const withoutStrings = (expr: string): string => expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, (s) => `"${' '.repeat(s.length - 2)}"`);

/** The name of the function whose argument list holds position `at`, if any. */
function enclosingFunction(expr: string, at: number): string | undefined {
  let depth = 0;
  for (let i = at - 1; i >= 0; i--) {
    const c = expr[i];
    if (c === ')') depth++;
    else if (c === '(') {
      if (depth === 0) return /([a-zA-Z_][a-zA-Z0-9_]*)\s*$/.exec(expr.slice(0, i))?.[1];
      depth--;
    }
  }
  return undefined;
}

/** The range selectors of an expression (and subqueries' ranges), each with the function it is given to. */
export function rangesIn(expr: string): { readonly range: string; readonly fn: string | undefined }[] {
  const bare = withoutStrings(expr);
  return [...bare.matchAll(/\[([^\]]*)\]/g)].map((m) => ({ range: m[1]!.split(':')[0]!.trim(), fn: enclosingFunction(bare, m.index) }));
}

function windowProblems(expr: string): string[] {
  const out: string[] = [];
  for (const { range, fn } of rangesIn(expr)) {
    if (fn && RATE_FUNCTIONS.has(fn)) {
      if (!RATE_INTERVAL.has(range)) out.push(`${fn}() over [${range}], not [$__rate_interval]`);
    } else if (!GRAFANA_INTERVALS.has(range)) {
      out.push(`a fixed window [${range}]${fn ? ` in ${fn}()` : ''}: use one of Grafana's intervals`);
    }
  }
  return out;
}

/** The rules of the header, for every dashboard of grafana/dashboards. */
export function lintDashboard(d: Dashboard): LintProblem[] {
  const problems: LintProblem[] = [];
  const add = (rule: LintRule, where: string, message: string): void => void problems.push({ rule, where, message });

  const variables = d.templating?.list ?? [];
  const dsVariable = variables.find((v) => v.type === 'datasource' && v.query === 'prometheus');
  if (!dsVariable) add('datasource', 'dashboard', 'no datasource variable (type datasource, query prometheus)');
  // Anything else and Grafana opens the first Prometheus datasource by name, not the default.
  else if (dsVariable.current?.value !== 'default' || dsVariable.current?.text !== 'default') {
    add('datasource', `variable ${dsVariable.name}`, 'does not start on "default" (current: {text: "default", value: "default"})');
  }
  const refs = dsVariable ? new Set([`$${dsVariable.name}`, `\${${dsVariable.name}}`]) : new Set<string>();
  const usesVariable = (ds: { uid?: string } | undefined): boolean => ds?.uid !== undefined && refs.has(ds.uid);
  const named = (ds: { uid?: string } | undefined): string => (ds?.uid ? `datasource ${ds.uid}` : 'no datasource');
  const expected = dsVariable ? `\${${dsVariable.name}}` : 'a datasource variable';

  for (const v of variables) {
    if (v.type === 'query' && !usesVariable(v.datasource)) add('datasource', `variable ${v.name}`, `reads ${named(v.datasource)}, not ${expected}`);
  }

  for (const p of panelsOf(d)) {
    const where = `panel "${p.title ?? `#${p.id}`}"`;
    const targets = (p.targets ?? []) as Target[];
    if (targets.length && !usesVariable(p.datasource)) add('datasource', where, `reads ${named(p.datasource)}, not ${expected}`);
    for (const t of targets) {
      if (!usesVariable(t.datasource)) add('datasource', where, `query ${t.refId ?? '?'} reads ${named(t.datasource)}, not ${expected}`);
      if (typeof t.expr === 'string') for (const m of windowProblems(t.expr)) add('window', where, `query ${t.refId ?? '?'}: ${m}`);
    }
    const unit: unknown = p.fieldConfig?.defaults?.unit;
    if (typeof unit !== 'string' || !unit.trim()) add('unit', where, 'no unit');
    if (!p.description?.trim()) add('description', where, 'no description');
  }
  return problems;
}
