import type { IncomingMessage } from 'node:http';
import { tokenDigest, type TokenTable } from '../config/token-file.ts';

/** Why a request was refused: no Bearer credential, a token not in the file, or a read token on a write method. */
export type AuthFailure = 'missing' | 'unknown' | 'scope';
export const AUTH_FAILURES: readonly AuthFailure[] = ['missing', 'unknown', 'scope'];

/** The token after `Bearer ` (scheme case-insensitive, RFC 7235), or undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined || header.length < 8) return undefined;
  if (header.charCodeAt(6) !== 32 || header.slice(0, 6).toLowerCase() !== 'bearer') return undefined;
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
}

/**
 * The bearer tokens of SPEC §8, swappable while serving (a reload replaces the table;
 * a request already checked keeps its answer).
 *
 * Constant time with respect to the tokens: the presented token is hashed (SHA-256, whose
 * time depends on the presented length only) and its digest looked up in a map keyed by
 * the digests of the tokens. No comparison ever runs on a token's characters; the map's
 * comparisons run on digests, and how many leading digest bytes of a guess match a stored
 * digest tells nothing about a token that would bring a next guess closer (finding an
 * input for chosen digest bytes is what SHA-256 makes infeasible).
 */
export class BearerAuth {
  #table: TokenTable;

  constructor(table: TokenTable) {
    this.#table = table;
  }

  get table(): TokenTable {
    return this.#table;
  }

  replace(table: TokenTable): void {
    this.#table = table;
  }

  /** undefined when the request may go on; else why it may not. */
  check(req: IncomingMessage): AuthFailure | undefined {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return 'missing';
    const scope = this.#table.scopes.get(tokenDigest(token));
    if (scope === undefined) return 'unknown';
    if (scope === 'read' && req.method !== 'GET' && req.method !== 'HEAD') return 'scope';
    return undefined;
  }
}
