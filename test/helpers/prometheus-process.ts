import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listen } from '../../services/shared/listen.ts';

export interface ScrapeTarget {
  readonly job: string;
  readonly target: string; // host:port of an admin endpoint
}

export interface PromSample {
  readonly metric: Record<string, string>;
  readonly value: number;
}

export interface PromAlert {
  readonly labels: Record<string, string>;
  readonly state: 'pending' | 'firing';
}

export interface PrometheusProcess {
  readonly url: string;
  query(expr: string): Promise<PromSample[]>;
  alerts(): Promise<PromAlert[]>;
  targets(): Promise<{ job: string; health: string }[]>;
  /** Polls `probe` until it returns a value, or throws with the last result after `deadlineMs`. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs?: number): Promise<T>;
  stop(): Promise<void>;
}

/** True when a `prometheus` binary is on PATH (Debian's package, or upstream's). */
export function prometheusAvailable(): boolean {
  return spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;
}

async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server, 0, '127.0.0.1');
  await new Promise((r) => server.close(r));
  return port;
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

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(url + path);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error}`);
    return body.data;
  };

  const prom: PrometheusProcess = {
    url,
    async query(expr) {
      const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
        `/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async alerts() {
      const data = await api<{ alerts: PromAlert[] }>('/api/v1/alerts');
      return data.alerts;
    },
    async targets() {
      const data = await api<{ activeTargets: { labels: Record<string, string>; health: string }[] }>('/api/v1/targets');
      return data.activeTargets.map((t) => ({ job: t.labels.job!, health: t.health }));
    },
    async waitFor(what, probe, deadlineMs = 30_000) {
      const deadline = Date.now() + deadlineMs;
      let lastError: unknown;
      while (Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`prometheus exited while waiting for ${what}:\n${log}`);
        try {
          const v = await probe();
          if (v !== undefined) return v;
        } catch (err) {
          lastError = err;
        }
        // Prometheus scrapes and evaluates once a second: poll a few times per cycle.
        await new Promise((r) => setTimeout(r, 250));
      }
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    },
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
