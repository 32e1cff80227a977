import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prometheusApi, type PrometheusApi } from './prometheus-api.ts';
import { freePort } from './service-process.ts';

export interface ScrapeTarget {
  readonly job: string;
  readonly target: string; // host:port of an admin endpoint
}

export interface PrometheusProcess extends PrometheusApi {
  stop(): Promise<void>;
}

/** True when a `prometheus` binary is on PATH (Debian's package, or upstream's). */
export function prometheusAvailable(): boolean {
  return spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Runs a real Prometheus against local processes: scrapes the given targets every
 * second, evaluates the given rule files every second, stores its data in a
 * temporary directory that stop() removes.
 */
export async function startPrometheus(targets: readonly ScrapeTarget[], ruleFiles: readonly string[]): Promise<PrometheusProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'kvstack-prom-'));
  const jobs = new Map<string, string[]>();
  for (const t of targets) jobs.set(t.job, [...(jobs.get(t.job) ?? []), t.target]);
  const config = [
    'global:',
    '  scrape_interval: 1s',
    '  evaluation_interval: 1s',
    'rule_files:',
    ...ruleFiles.map((f) => `  - ${JSON.stringify(f)}`),
    'scrape_configs:',
    ...[...jobs].flatMap(([job, list]) => [
      `  - job_name: ${JSON.stringify(job)}`,
      '    static_configs:',
      `      - targets: ${JSON.stringify(list)}`,
    ]),
  ].join('\n');
  writeFileSync(join(dir, 'prometheus.yml'), config + '\n');

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (c: Buffer) => {
    log = (log + c.toString()).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const prom: PrometheusProcess = {
    ...prometheusApi(url, () => (child.exitCode !== null ? log : undefined)),
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    await prom.waitFor('prometheus to be ready', async () => ((await fetch(url + '/-/ready')).ok ? true : undefined), 20_000);
  } catch (err) {
    await prom.stop();
    throw err;
  }
  return prom;
}
