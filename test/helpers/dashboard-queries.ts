import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface DashboardQuery {
  readonly dashboard: string;
  readonly panel: string;
  readonly expr: string;
}

const dashboardsDir = fileURLToPath(new URL('../../grafana/dashboards/', import.meta.url));

/** Every PromQL expression of every generated dashboard (panel targets and variable queries). */
export function dashboardQueries(): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  for (const file of readdirSync(dashboardsDir).filter((f) => f.endsWith('.json'))) {
    const dashboard = JSON.parse(readFileSync(dashboardsDir + file, 'utf8')) as { title?: string; panels?: unknown[] };
    const walk = (node: unknown, panel: string): void => {
      if (Array.isArray(node)) return node.forEach((n) => walk(n, panel));
      if (!node || typeof node !== 'object') return;
      const obj = node as Record<string, unknown>;
      const title = typeof obj.title === 'string' && Array.isArray(obj.targets) ? obj.title : panel;
      if (Array.isArray(obj.targets)) {
        for (const t of obj.targets as { expr?: unknown }[]) {
          if (typeof t.expr === 'string' && t.expr.trim()) out.push({ dashboard: dashboard.title ?? file, panel: title, expr: t.expr });
        }
      }
      for (const [k, v] of Object.entries(obj)) if (k !== 'targets') walk(v, title);
    };
    walk(dashboard.panels ?? [], '');
  }
  return out;
}

/**
 * Replaces Grafana's template variables the way Grafana would for "All": interval
 * variables get a concrete range, other variables a regex matching everything (the
 * dashboards use them with `=~`).
 */
export function resolveTemplateVariables(expr: string, range = '30s'): string {
  return expr
    .replace(/\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g, range)
    .replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]/g, '.*');
}
