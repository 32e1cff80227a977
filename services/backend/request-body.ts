import type { IncomingMessage } from 'node:http';
import type { BodyBudget } from './body-budget.ts';

/** How reading a body ended; every refusal is a `reason` of kvbackend_http_body_refusals_total. */
export type BodyOutcome = 'ok' | 'aborted' | BodyRefusal;
export type BodyRefusal = 'too_large' | 'timeout' | 'buffer_full';

export interface BodyLimits {
  readonly limit: number;
  readonly timeoutMs: number;
  readonly budget: BodyBudget;
}

/**
 * Reads a request body of at most `limit` bytes within `timeoutMs`, holding its bytes
 * against the shared budget. A declared Content-Length over the limit, or one that does
 * not fit the budget, is refused before anything is read; a chunked body is refused as
 * soon as it passes either; the chunks read so far are dropped and their bytes given back.
 */
export function readBody(req: IncomingMessage, { limit, timeoutMs, budget }: BodyLimits, done: (outcome: BodyOutcome, body?: Buffer) => void): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return done('too_large');
  // A declared length is taken whole at once: stalled uploads cannot each pass the check
  // with nothing read yet and then fill memory together.
  let held = declared === undefined ? 0 : Number(declared);
  if (!budget.take(held)) return done('buffer_full');
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const timer = setTimeout(() => settle('timeout'), timeoutMs);
  const settle = (outcome: BodyOutcome, body?: Buffer): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    budget.give(held);
    held = 0;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onAbort);
    req.off('close', onAbort);
    done(outcome, body);
  };
  const refuse = (outcome: BodyRefusal): void => {
    chunks.length = 0;
    settle(outcome);
    req.resume(); // keep discarding until the connection closes; nothing more is held
  };
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size > limit) return refuse('too_large');
    if (size > held) {
      if (!budget.take(size - held)) return refuse('buffer_full');
      held = size;
    }
    chunks.push(chunk);
  };
  const onEnd = (): void => settle('ok', chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  const onAbort = (): void => settle('aborted');
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onAbort);
  req.on('close', onAbort);
}
