// Reads the observability sources the tests check: the rules of alert-rules.yml, every
// PromQL expression of the dashboards, and the metric names those expressions use.
// The rules file is read line by line in the shape it is written in (`- alert:` /
// `- record:` items with `expr:`, `labels:` and `annotations:`); the config test
// cross-checks the count against promtool, so a rule this reader missed shows up.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dashboardQueries, resolveTemplateVariables } from './dashboard-queries.ts';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const repoFile = (path: string): string => repoRoot + path;
export const readRepoFile = (path: string): string => readFileSync(repoFile(path), 'utf8');

export interface Rule {
  readonly kind: 'alert' | 'record';
  readonly name: string;
  readonly expr: string;
  /** The rule's whole text in the file (labels, annotations, for). */
  readonly text: string;
  /** labels.severity of an alert. */
  readonly severity?: string;
  readonly runbookUrl?: string;
}

const indentOf = (line: string): number => line.length - line.trimStart().length;

/** The rules of a Prometheus rules file written in this repository's style. */
export function readRules(path = 'alert-rules.yml'): Rule[] {
  const lines = readRepoFile(path).split('\n');
  const rules: Rule[] = [];
  for (let i = 0; i < lines.length; i++) {
    const start = /^(\s*)- (alert|record): (\S+)\s*$/.exec(lines[i]!);
    if (!start) continue;
    const itemIndent = start[1]!.length;
    const body: string[] = [lines[i]!];
    // The item runs until a line at or left of its dash (blank lines and comments aside).
    let j = i + 1;
    for (; j < lines.length; j++) {
      const l = lines[j]!;
      if (l.trim() !== '' && !l.trim().startsWith('#') && indentOf(l) <= itemIndent) break;
      body.push(l);
    }
    const text = body.join('\n');
    rules.push({
      kind: start[2] as 'alert' | 'record',
      name: start[3]!,
      expr: exprOf(body),
      text,
      severity: /^\s+severity: (\S+)\s*$/m.exec(text)?.[1],
      runbookUrl: /^\s+runbook_url: (\S+)\s*$/m.exec(text)?.[1],
    });
    i = j - 1;
  }
  return rules;
}

function exprOf(body: string[]): string {
  const at = body.findIndex((l) => /^\s+expr:/.test(l));
  if (at === -1) throw new Error(`no expr in rule:\n${body.join('\n')}`);
  const line = body[at]!;
  const inline = line.slice(line.indexOf('expr:') + 5).trim();
  if (inline !== '|' && inline !== '>' && inline !== '|-' && inline !== '>-') return inline;
  const keyIndent = indentOf(line);
  const block: string[] = [];
  for (const l of body.slice(at + 1)) {
    if (l.trim() !== '' && indentOf(l) <= keyIndent) break;
    block.push(l.trim());
  }
  return block.join('\n').trim();
}

export interface NamedExpr {
  /** Where it is: `dashboard / panel` or `rule <name>`. */
  readonly where: string;
  readonly expr: string;
}

/**
 * Every PromQL expression of the committed dashboards: panel targets, and the series
 * selector inside each template variable's `label_values(<selector>, <label>)`.
 */
export function dashboardExpressions(): NamedExpr[] {
  const out: NamedExpr[] = dashboardQueries().map((q) => ({ where: `${q.dashboard} / ${q.panel}`, expr: q.expr }));
  const dir = repoFile('grafana/dashboards/');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const d = JSON.parse(readFileSync(dir + file, 'utf8')) as { title: string; templating: { list: { name: string; type: string; query?: unknown }[] } };
    // The datasource variable picks a datasource; the query variables query it.
    for (const v of d.templating.list.filter((v) => v.type === 'query')) {
      const text = typeof v.query === 'string' ? v.query : JSON.stringify(v.query);
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(text);
      if (!m) throw new Error(`${file}: variable ${v.name} is not label_values(<selector>, <label>): ${text}`);
      out.push({ where: `${d.title} / variable ${v.name}`, expr: m[1]! });
    }
  }
  return out;
}

/** The expression as Prometheus would receive it from Grafana with "All" selected. */
export const resolved = (expr: string): string => resolveTemplateVariables(expr);

/**
 * Metric names an expression reads: identifiers with a service or process prefix
 * (kvstore_, kvbackend_, process_, nodejs_), and recording-rule names (with colons).
 * Label names, functions and keywords never carry those prefixes.
 */
export function metricNamesIn(expr: string): string[] {
  const names = new Set<string>();
  const tokens = expr.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  for (const t of tokens) {
    if (t.includes(':') || /^(kvstore|kvbackend|process|nodejs)_/.test(t)) names.add(t);
  }
  return [...names];
}

// ---------------------------------------------------------------------------------------
// promtool

export const promtoolRequired = process.env.CI === 'true' || process.env.REQUIRE_PROMTOOL === '1';

export function toolAvailable(tool: string): boolean {
  return spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Runs a tool from the repository root; output is both streams together, for messages. */
export function runTool(tool: string, args: readonly string[]): { status: number | null; output: string } {
  const r: SpawnSyncReturns<string> = spawnSync(tool, args, { cwd: repoRoot, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}
