// Three failure classes a caller must tell apart (as node-redis does): the store said
// ERROR, the transport failed, or the store did not answer in time. A reply that fits
// no known shape is a protocol error.

import { ERROR_REASONS, errorLine } from '../protocol/replies.ts';

export class StoreError extends Error {
  override name = 'StoreError';
}

/** The store answered `ERROR <reason>`; the connection is still usable. */
export class StoreReplyError extends StoreError {
  override name = 'StoreReplyError';
  readonly reason: string;
  constructor(reason: string) {
    super(`store replied ERROR ${reason}`);
    this.reason = reason;
  }
}

/** Could not reach the store, or the connection failed before the reply came. */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError';
}

/**
 * The store took the connection and refused it at once (`ERROR max connections
 * reached`): it is full, not down. A transport failure (the socket is closed), told
 * apart so that a full store can be reported as full.
 */
export class StoreMaxConnectionsError extends StoreUnavailableError {
  override name = 'StoreMaxConnectionsError';
}

/**
 * The store refused this client's password, or wants one and the client has none (SPEC §8):
 * a transport failure, as no command can go through on that connection. The message
 * names the store and its reply, never the password.
 */
export class StoreAuthError extends StoreUnavailableError {
  override name = 'StoreAuthError';
}

/** The reply to any command but AUTH and QUIT on a connection that has not sent the store's password. */
export const AUTHENTICATION_REQUIRED_REFUSAL = errorLine(ERROR_REASONS.authenticationRequired);

/** The line a store sends on a connection it refuses at MAX_CONNECTIONS (it never answers a command with it). */
export const MAX_CONNECTIONS_REFUSAL = errorLine(ERROR_REASONS.maxConnections);

/** The store did not answer within the command time-out. */
export class StoreTimeoutError extends StoreError {
  override name = 'StoreTimeoutError';
}

/** The store sent a reply this command cannot have. */
export class StoreProtocolError extends StoreError {
  override name = 'StoreProtocolError';
}

/** Why the client refused a command before sending anything: each has a stable code. */
export type ArgumentErrorCode = 'invalid_key' | 'invalid_value' | 'invalid_seconds';

/**
 * The client refused an argument that the line protocol cannot carry (a key with a space
 * or a line break, a value with LF, seconds out of range): nothing was sent. Rejected
 * through the command's promise, never thrown, so a caller handles every failure in one
 * place; not a store failure, so it is never counted as one.
 */
export class StoreArgumentError extends StoreError {
  override name = 'StoreArgumentError';
  readonly code: ArgumentErrorCode;
  constructor(code: ArgumentErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** The metric label (`kind`) of a failure, from the fixed set of SPEC §4. */
export function errorKind(err: unknown): 'timeout' | 'unavailable' | 'protocol' {
  if (err instanceof StoreTimeoutError) return 'timeout';
  if (err instanceof StoreUnavailableError) return 'unavailable';
  return 'protocol';
}
