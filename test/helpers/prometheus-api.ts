import { waitUntil } from './wait-until.ts';

export interface PromSample {
  readonly metric: Record<string, string>;
  readonly value: number;
}

export interface PromAlert {
  readonly labels: Record<string, string>;
  readonly state: 'pending' | 'firing';
}

/** The parts of Prometheus' HTTP API the end-to-end checks use. */
export interface PrometheusApi {
  readonly url: string;
  query(expr: string): Promise<PromSample[]>;
  /** Sum of every sample of `expr` (0 when it returns nothing). */
  sum(expr: string): Promise<number>;
  alerts(): Promise<PromAlert[]>;
  targets(): Promise<{ job: string; health: string }[]>;
  /** Polls `probe` until it returns a value; throws after `deadlineMs` with what it last saw. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs?: number): Promise<T>;
}

export function prometheusApi(url: string, stillRunning: () => string | undefined = () => undefined): PrometheusApi {
  const get = async <T>(path: string): Promise<T> => {
    const res = await fetch(url + path);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error}`);
    return body.data;
  };
  const api: PrometheusApi = {
    url,
    async query(expr) {
      const data = await get<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
        `/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async sum(expr) {
      return (await api.query(expr)).reduce((total, s) => total + s.value, 0);
    },
    async alerts() {
      return (await get<{ alerts: PromAlert[] }>('/api/v1/alerts')).alerts;
    },
    async targets() {
      const data = await get<{ activeTargets: { labels: Record<string, string>; health: string }[] }>('/api/v1/targets');
      return data.activeTargets.map((t) => ({ job: t.labels.job!, health: t.health }));
    },
    waitFor(what, probe, deadlineMs = 60_000) {
      return waitUntil(what, probe, { deadlineMs, abort: () => (stillRunning() ? `prometheus stopped: ${stillRunning()}` : undefined) });
    },
  };
  return api;
}
