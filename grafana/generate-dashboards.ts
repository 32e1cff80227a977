// Generates grafana/dashboards/<name>.json from each grafana/dashboards/<name>.ts (its
// default export), the files Grafana's provisioning loads. A dashboard that breaks one of
// the rules of dashboard-lint.ts is refused, not written.
//   npm run dashboards            write the JSON files
//   node grafana/generate-dashboards.ts --check   exit 1 if a committed file is stale
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Dashboard } from './dashboard-builder.ts';
import { formatProblem, lintDashboard } from './dashboard-lint.ts';

export const dashboardsDir = fileURLToPath(new URL('./dashboards/', import.meta.url));

/** The JSON text each dashboard source renders to, by JSON file name. */
export async function renderDashboards(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const sources = readdirSync(dashboardsDir)
    .filter((f) => f.endsWith('.ts'))
    .sort();
  for (const source of sources) {
    const mod = (await import(pathToFileURL(dashboardsDir + source).href)) as { default?: Dashboard };
    if (!mod.default?.uid) throw new Error(`grafana/dashboards/${source} must export a dashboard (built with dashboard()) as its default`);
    const problems = lintDashboard(mod.default);
    if (problems.length) {
      const hint = problems.some((p) => p.rule === 'window')
        ? '\nA count over a window, as an alert takes it, is the rate times the window: perWindow() in grafana/dashboards/kvstack.ts.'
        : '';
      throw new Error(`grafana/dashboards/${source} breaks the dashboard rules (grafana/dashboard-lint.ts):\n  ${problems.map(formatProblem).join('\n  ')}${hint}`);
    }
    out.set(source.replace(/\.ts$/, '.json'), JSON.stringify(mod.default, null, 2) + '\n');
  }
  return out;
}

/** Names of the committed JSON files that differ from what their source renders (or have no source). */
export async function staleDashboards(): Promise<string[]> {
  const rendered = await renderDashboards();
  const stale: string[] = [];
  for (const [file, text] of rendered) {
    let committed: string | undefined;
    try {
      committed = readFileSync(dashboardsDir + file, 'utf8');
    } catch {
      committed = undefined;
    }
    if (committed !== text) stale.push(file);
  }
  for (const file of readdirSync(dashboardsDir).filter((f) => f.endsWith('.json'))) {
    if (!rendered.has(file)) stale.push(`${file} (no ${file.replace(/\.json$/, '.ts')})`);
  }
  return stale;
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const stale = await staleDashboards();
    if (stale.length) {
      process.stderr.write(`stale dashboard JSON: ${stale.join(', ')} — run npm run dashboards\n`);
      process.exitCode = 1;
    }
  } else {
    for (const [file, text] of await renderDashboards()) {
      writeFileSync(dashboardsDir + file, text);
      process.stdout.write(`wrote grafana/dashboards/${file}\n`);
    }
  }
}

if (import.meta.main) {
  // A dashboard that breaks a rule is the user's to fix: its message, not a stack trace.
  await main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
