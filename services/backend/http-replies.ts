import { MAX_KEY_BYTES, MAX_TTL_SECONDS } from '../protocol/limits.ts';
import { ERROR_REASONS } from '../protocol/replies.ts';
import { StoreArgumentError, StoreProtocolError, StoreReplyError, StoreTimeoutError, StoreUnavailableError } from '../client/errors.ts';

/** A fixed error reply: status and a short plain-text body (never a stack trace). */
export interface ErrorReply {
  readonly status: number;
  readonly body: Buffer;
}

const reply = (status: number, text: string): ErrorReply => Object.freeze({ status, body: Buffer.from(`${text}\n`) });

/** Every error the backend answers with (SPEC §2), in one place. */
export const errorReplies = Object.freeze({
  missingKey: reply(400, 'missing key: the key is the first path segment, as in /my-key'),
  invalidKey: reply(400, `invalid key: 1 to ${MAX_KEY_BYTES} bytes of UTF-8 after percent-decoding, no spaces or control characters`),
  invalidTtl: reply(400, `invalid ttl: expected whole seconds from 1 to ${MAX_TTL_SECONDS}`),
  lineBreakInValue: reply(400, 'invalid value: the body cannot contain CR or LF'),
  missingToken: reply(401, 'authentication required: send Authorization: Bearer <token>'),
  unknownToken: reply(401, 'invalid token'),
  readOnlyToken: reply(403, 'this token may only read (GET, HEAD)'),
  notFound: reply(404, 'not found'),
  methodNotAllowed: reply(405, 'method not allowed'),
  bodyTimeout: reply(408, 'request body not received in time'),
  valueTooLarge: reply(413, 'value too large'),
  internal: reply(500, 'internal error'),
  badStoreReply: reply(502, 'bad reply from the store'),
  storeUnavailable: reply(503, 'store unavailable'),
  shuttingDown: reply(503, 'shutting down'),
  bodyBufferFull: reply(503, 'too many request bodies in progress: retry later'),
  storeTimeout: reply(504, 'store did not answer in time'),
  storeOutOfMemory: reply(507, 'store out of memory'),
});

/** The reply for a failed store command. */
export function replyForStoreError(err: unknown): ErrorReply {
  if (err instanceof StoreUnavailableError) return errorReplies.storeUnavailable;
  if (err instanceof StoreTimeoutError) return errorReplies.storeTimeout;
  if (err instanceof StoreReplyError) return err.reason === ERROR_REASONS.outOfMemory ? errorReplies.storeOutOfMemory : errorReplies.badStoreReply;
  if (err instanceof StoreProtocolError) return errorReplies.badStoreReply;
  // The app checks every argument first; the client library refusing one is the same 400.
  if (err instanceof StoreArgumentError) return err.code === 'invalid_key' ? errorReplies.invalidKey : err.code === 'invalid_value' ? errorReplies.lineBreakInValue : errorReplies.invalidTtl;
  return errorReplies.internal;
}

/** The WWW-Authenticate challenge of each refusal (RFC 6750 §3); the token is never echoed. */
export const bearerChallenges = Object.freeze({
  missing: 'Bearer realm="kvbackend"',
  unknown: 'Bearer realm="kvbackend", error="invalid_token"',
  scope: 'Bearer realm="kvbackend", error="insufficient_scope", scope="write"',
});

export const ALLOWED_METHODS = 'GET, HEAD, PUT, POST, DELETE';
