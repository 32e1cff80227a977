import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

// The admin port's four routes, on Node's own HTTP server: Express would cost the store
// ~190 ms of start-up and ~20 MiB of resident memory for them
// (docs/benchmarks.md#start-up). As Express routes did: GET (and HEAD) only,
// the path matched without its query string, case-insensitively and with or without a
// trailing slash; anything else is 404.

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

export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => void;

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The admin endpoints both services serve on their own port (SPEC §3).
 * /livez depends on nothing downstream; /readyz and /healthz run the probe.
 */
export function createAdminApp({ registry, probe, health }: AdminAppOptions): AdminHandler {
  const routes: Record<string, (res: ServerResponse) => Promise<void> | void> = {
    '/metrics': async (res) => send(res, 200, registry.contentType, await registry.metrics()),
    '/livez': (res) => send(res, 200, TEXT, 'ok\n'),
    '/readyz': async (res) => {
      try {
        await probe();
        send(res, 200, TEXT, 'ready\n');
      } catch {
        send(res, 503, TEXT, 'not ready\n');
      }
    },
    '/healthz': async (res) => {
      if (health) {
        const answer = await health();
        send(res, answer.statusCode, JSON_TYPE, JSON.stringify(answer.body));
        return;
      }
      const started = performance.now();
      try {
        const usage = await probe();
        const latencyMs = Math.round((performance.now() - started) * 1000) / 1000;
        send(res, 200, JSON_TYPE, JSON.stringify({ status: 'ok', usage, latencyMs }));
      } catch (err) {
        send(res, 503, JSON_TYPE, JSON.stringify({ status: 'error', error: err instanceof Error ? err.message : String(err) }));
      }
    },
  };
  return (req, res) => {
    const route = req.method === 'GET' || req.method === 'HEAD' ? routes[routeOf(req.url ?? '/')] : undefined;
    if (route === undefined) {
      send(res, 404, TEXT, 'not found\n');
      return;
    }
    Promise.resolve()
      .then(() => route(res))
      .catch(() => {
        if (!res.headersSent) send(res, 500, TEXT, 'internal error\n');
        else res.destroy();
      });
  };
}

/** The path as the routes know it: no query string, lower case, no trailing slash. */
function routeOf(url: string): string {
  const q = url.indexOf('?');
  const path = (q === -1 ? url : url.slice(0, q)).toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
