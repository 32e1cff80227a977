import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { StoreCommands } from '../client/store-commands.ts';
import { isValidTtlSeconds } from '../protocol/limits.ts';
import { httpBodyProblem } from '../protocol/value-rules.ts';
import type { Logger } from '../shared/logger.ts';
import { assignRequestId, createAccessLog } from './access-log.ts';
import type { BackendMetrics } from './backend-metrics.ts';
import { BodyBudget } from './body-budget.ts';
import type { BearerAuth } from './bearer-auth.ts';
import { ALLOWED_METHODS, bearerChallenges, errorReplies, replyForStoreError, type ErrorReply } from './http-replies.ts';
import { keyFromPath } from './key-from-path.ts';
import { readBody } from './request-body.ts';

/** What the app needs from the store: the ring of shard pools (ShardedStore) in production, anything alike in tests and benchmarks. */
export type BackendStore = Pick<StoreCommands, 'get' | 'set' | 'del'>;

export interface BackendAppOptions {
  readonly store: BackendStore;
  /** Omitted where nothing reads them: tests of the HTTP surface, and the HTTP bench measuring what metrics cost. */
  readonly metrics?: BackendMetrics | undefined;
  readonly logger: Logger;
  /** Largest body accepted; more is 413 (and is not read). */
  readonly maxValueBytes: number;
  /** Longest a body may take to arrive, from its request's headers; longer is 408 (default 30 s). */
  readonly bodyTimeoutMs?: number;
  /** Body bytes held at once across all requests; a body that does not fit is 503 at once (default: no bound). */
  readonly bodyBudget?: BodyBudget;
  /** BACKEND_TOKENS_FILE's tokens: when given, every request needs `Authorization: Bearer <token>` (SPEC §8). */
  readonly auth?: BearerAuth | undefined;
  /** True once the listener has closed during shutdown: new requests get 503. */
  readonly isClosing?: () => boolean;
  /** True once shutdown has begun (the drain delay included): every response closes its connection. Defaults to isClosing. */
  readonly isDraining?: () => boolean;
}

const TEXT = 'text/plain; charset=utf-8';

/** `?ttl=` of a PUT/POST: undefined when absent, NaN when malformed or out of range. */
function ttlFromUrl(url: string): number | undefined {
  const q = url.indexOf('?');
  if (q === -1) return undefined;
  const values = new URLSearchParams(url.slice(q + 1)).getAll('ttl');
  if (values.length === 0) return undefined;
  if (values.length > 1 || !/^\d{1,20}$/.test(values[0]!)) return NaN;
  const seconds = Number(values[0]);
  return isValidTtlSeconds(seconds) ? seconds : NaN;
}

/** Whether a body follows the request's headers. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * The HTTP cache of SPEC §2 as an Express app (no listening here, so supertest can
 * drive it). One middleware answers every request: the hot path (GET of a key) runs
 * no router, body parser or query parser, and writes the response with Node's own calls.
 */
export function createBackendApp(options: BackendAppOptions): Express {
  const { logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(createBackendHandler(options));

  // Reached only if the handler throws synchronously past its own try (a bug).
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    logger.error({ err }, 'unhandled error in the backend app');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.statusCode = 500;
    res.setHeader('Content-Type', TEXT);
    res.end(errorReplies.internal.body);
  });

  return app;
}

/**
 * The one middleware of createBackendApp. It uses nothing of Express (only Node's
 * request and response), so the HTTP benchmark can also run it on a bare node:http
 * server and measure what Express adds; the service always runs it inside the app.
 */
export function createBackendHandler({
  store,
  metrics,
  logger,
  maxValueBytes,
  bodyTimeoutMs = 30_000,
  bodyBudget = new BodyBudget(Infinity),
  auth,
  isClosing = () => false,
  isDraining = isClosing,
}: BackendAppOptions): (req: IncomingMessage, res: ServerResponse) => void {
  // Access logs cost a child logger per request; skip them when nothing would be written.
  const accessLog = logger.isLevelEnabled('warn') ? createAccessLog(logger) : undefined;

  return (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    assignRequestId(req, res);
    accessLog?.(req, res);

    const finish = (status: number, body?: Buffer, contentType = TEXT): void => {
      if (isDraining()) res.setHeader('Connection', 'close');
      res.statusCode = status;
      if (body !== undefined) {
        res.setHeader('Content-Type', contentType);
        res.setHeader('Content-Length', body.length);
      }
      if (!res.destroyed) res.end(req.method === 'HEAD' ? undefined : body);
      metrics?.recordRequest(req.method!, status, (performance.now() - started) / 1000);
    };
    const fail = (reply: ErrorReply): void => finish(reply.status, reply.body);
    const storeFailed = (err: unknown): void => {
      const reply = replyForStoreError(err);
      if (reply.status >= 500 && err instanceof Error) res.err = err;
      if (reply === errorReplies.internal) logger.error({ err }, 'unexpected error while answering a request');
      fail(reply);
    };

    if (isClosing()) return fail(errorReplies.shuttingDown);
    if (auth !== undefined) {
      const refused = auth.check(req);
      if (refused !== undefined) {
        metrics?.recordAuthFailure(refused);
        res.setHeader('WWW-Authenticate', bearerChallenges[refused]);
        // A body is not read for a refused request: close the connection after the answer.
        if (hasBody(req)) res.setHeader('Connection', 'close');
        return fail(refused === 'missing' ? errorReplies.missingToken : refused === 'unknown' ? errorReplies.unknownToken : errorReplies.readOnlyToken);
      }
    }
    const found = keyFromPath(req.url!);
    if ('error' in found && found.error === 'missing') return fail(errorReplies.missingKey);
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD' && method !== 'PUT' && method !== 'POST' && method !== 'DELETE') {
      res.setHeader('Allow', ALLOWED_METHODS);
      return fail(errorReplies.methodNotAllowed);
    }
    if ('error' in found) return fail(errorReplies.invalidKey);
    const key = found.key;

    try {
      if (method === 'GET' || method === 'HEAD') {
        store.get(key).then((value) => (value === null ? fail(errorReplies.notFound) : finish(200, value)), storeFailed);
      } else if (method === 'DELETE') {
        store.del(key).then(() => finish(204), storeFailed);
      } else {
        const ttl = ttlFromUrl(req.url!);
        if (Number.isNaN(ttl)) return fail(errorReplies.invalidTtl);
        readBody(req, { limit: maxValueBytes, timeoutMs: bodyTimeoutMs, budget: bodyBudget }, (outcome, body) => {
          if (outcome === 'aborted') return; // the client is gone; nothing to answer
          if (outcome !== 'ok') {
            metrics?.recordBodyRefusal(outcome);
            // The rest of the body is not read: close the connection after the answer.
            res.setHeader('Connection', 'close');
            return fail(outcome === 'too_large' ? errorReplies.valueTooLarge : outcome === 'timeout' ? errorReplies.bodyTimeout : errorReplies.bodyBufferFull);
          }
          // A line break would end the store command early and start another one.
          if (httpBodyProblem(body!) !== undefined) return fail(errorReplies.lineBreakInValue);
          // Outside the try below (this runs later): the client's argument checks throw synchronously.
          try {
            store.set(key, body!, ttl).then(() => finish(204), storeFailed);
          } catch (err) {
            storeFailed(err);
          }
        });
      }
    } catch (err) {
      storeFailed(err);
    }
  };
}
