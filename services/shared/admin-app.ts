import express, { type Express } from 'express';
import type { Registry } from 'prom-client';

/** Sends USAGE to a store and resolves with its answer; rejects on any failure or time-out. */
export type UsageProbe = () => Promise<number>;

/** A /healthz answer computed by the service itself (the backend lists its shards). */
export interface HealthAnswer {
  readonly statusCode: number;
  readonly body: object;
}

export interface AdminAppOptions {
  readonly registry: Registry;
  /** Behind /readyz, and /healthz unless `health` is given. */
  readonly probe: UsageProbe;
  /** Replaces the probe's /healthz body (never rejects). */
  readonly health?: () => Promise<HealthAnswer>;
}

/**
 * The admin endpoints both services serve on their own port (SPEC §3).
 * /livez depends on nothing downstream; /readyz and /healthz run the probe.
 */
export function createAdminApp({ registry, probe, health }: AdminAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');

  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });

  app.get('/livez', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  app.get('/readyz', async (_req, res) => {
    try {
      await probe();
      res.type('text/plain').send('ready\n');
    } catch {
      res.status(503).type('text/plain').send('not ready\n');
    }
  });

  app.get('/healthz', async (_req, res) => {
    if (health) {
      const answer = await health();
      res.status(answer.statusCode).json(answer.body);
      return;
    }
    const started = performance.now();
    try {
      const usage = await probe();
      const latencyMs = Math.round((performance.now() - started) * 1000) / 1000;
      res.json({ status: 'ok', usage, latencyMs });
    } catch (err) {
      res.status(503).json({ status: 'error', error: err instanceof Error ? err.message : String(err) });
    }
  });

  app.use((_req, res) => {
    res.status(404).type('text/plain').send('not found\n');
  });

  return app;
}
