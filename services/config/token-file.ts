import { cryptoModule, fs } from '../shared/builtins.ts';
import { ConfigError } from '../shared/config-error.ts';

// BACKEND_TOKENS_FILE (SPEC §8): one `<scope> <token>` per line. A message about the
// file names the variable, the path and the line number, never anything of the line
// itself: a line with a missing space would otherwise print its token.

export type TokenScope = 'read' | 'write';

/** The tokens of one file, held only as SHA-256 digests (hex) with their scopes. */
export interface TokenTable {
  /** digest of the token → its scope. */
  readonly scopes: ReadonlyMap<string, TokenScope>;
  readonly counts: Readonly<Record<TokenScope, number>>;
}

// RFC 6750's b64token: what may follow `Bearer ` in an Authorization header.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
// Fewer characters than this is guessable over a network whatever the alphabet.
export const MIN_TOKEN_LENGTH = 16;

/**
 * The key a token is held and looked up under. crypto.hash, the one-shot form, takes
 * under half the time of createHash().update().digest() (about 0.7 against 1.6 µs
 * here): it runs on every request (docs/benchmarks.md#bearer-tokens-and-https).
 */
export function tokenDigest(token: string): string {
  return cryptoModule().hash('sha256', token, 'hex');
}

/** Parses the text of a tokens file; throws a ConfigError naming `env`, the path and the line. */
export function parseTokens(text: string, path: string, env: string): TokenTable {
  const scopes = new Map<string, TokenScope>();
  const lineOf = new Map<string, number>();
  const counts = { read: 0, write: 0 };
  const fail = (n: number, why: string): never => {
    throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: line ${n} ${why}`);
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/[ \t]+/);
    if (fields.length !== 2) fail(n, `is not "<scope> <token>" (${fields.length} fields)`);
    const [scope, token] = fields as [string, string];
    if (scope !== 'read' && scope !== 'write') fail(n, 'has no scope: the first field must be read or write');
    if (!BEARER_TOKEN.test(token)) fail(n, 'has a token with characters a Bearer header cannot carry (A-Z a-z 0-9 - . _ ~ + / and trailing =)');
    if (token.length < MIN_TOKEN_LENGTH) fail(n, `has a token shorter than ${MIN_TOKEN_LENGTH} characters`);
    const digest = tokenDigest(token);
    const first = lineOf.get(digest);
    if (first !== undefined) fail(n, `repeats the token of line ${first}`);
    lineOf.set(digest, n);
    scopes.set(digest, scope as TokenScope);
    counts[scope as TokenScope]++;
  }
  if (scopes.size === 0) throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: it holds no token (every request would be refused)`);
  return { scopes, counts: Object.freeze(counts) };
}

/** Reads and parses a tokens file; throws a ConfigError naming `env` and the path. */
export function readTokensFile(path: string, env: string): TokenTable {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parseTokens(text, path, env);
}
