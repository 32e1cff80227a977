import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../shared/logger.ts';

// An incoming id is kept only if it is short and made of characters that are safe in a
// header, a log line and a shell; anything else is replaced, never echoed back.
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:@+=\/-]{1,128}$/;

/** The request's id: the client's `X-Request-Id` if it is safe, else a new UUID; echoed in the response. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
  req.id = id;
  res.setHeader('X-Request-Id', id);
  return id;
}

/**
 * One JSON line per response through pino-http, with the request id, method, status
 * and duration. The URL is left out on purpose: its first segment is the key, and
 * nothing about keys or values is logged above debug. 5xx answers log at warn with
 * the store error's type and message (no stack: they are expected failures).
 */
export function createAccessLog(logger: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  const middleware = pinoHttp({
    logger,
    genReqId: (req, res) => req.id ?? assignRequestId(req, res),
    wrapSerializers: false,
    serializers: {
      req: (req: IncomingMessage) => ({ id: req.id, method: req.method }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
      err: (err: Error) => ({ type: err.name, message: err.message }),
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'warn' : 'info'),
    customSuccessMessage: (req, res) => (!req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted'),
    customErrorMessage: () => 'request failed',
  });
  return (req, res) => middleware(req, res);
}
