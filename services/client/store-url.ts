import { Secret } from '../shared/secret.ts';

/** The scheme of a store's connection URL. */
export const STORE_URL_SCHEME = 'kvstack:';

/** The store's port when a URL names none (SPEC §1). */
export const DEFAULT_STORE_PORT = 8765;

/** What a connection URL says: where the store is and, when it has one, its password. */
export interface StoreUrlOptions {
  readonly host: string;
  readonly port: number;
  /** Wrapped so that logging the options never prints it. */
  readonly password?: Secret;
}

/**
 * Reads `kvstack://[:password@]host[:port]` (an IPv6 host in brackets, the password
 * percent-encoded, the port 8765 when absent) into options a StoreConnection or a
 * StorePool takes: `new StoreConnection({ ...parseStoreUrl(url), timeoutMs: 500 })`.
 * A URL with a user name, a path, a query or a fragment is refused: nothing would read
 * them. The error never repeats the URL, which may hold the password.
 */
export function parseStoreUrl(url: string): StoreUrlOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError('invalid store URL: expected kvstack://[:password@]host[:port]');
  }
  if (parsed.protocol !== STORE_URL_SCHEME) throw new TypeError(`invalid store URL: the scheme must be kvstack://, not ${parsed.protocol}//`);
  if (parsed.hostname === '') throw new TypeError('invalid store URL: no host');
  if (parsed.username !== '') throw new TypeError('invalid store URL: the store has no user names; write kvstack://:password@host:port');
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') {
    throw new TypeError('invalid store URL: nothing may follow host:port');
  }
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const port = parsed.port === '' ? DEFAULT_STORE_PORT : Number(parsed.port);
  if (port === 0) throw new TypeError('invalid store URL: port 0');
  if (parsed.password === '') return { host, port };
  let password: string;
  try {
    password = decodeURIComponent(parsed.password);
  } catch {
    throw new TypeError('invalid store URL: the password is not valid percent-encoding');
  }
  return { host, port, password: new Secret(password) };
}

/** The connection URL of a store: the inverse of parseStoreUrl. */
export function formatStoreUrl({ host, port, password }: { host: string; port: number; password?: string | Secret | undefined }): string {
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const secret = password instanceof Secret ? password.reveal() : password;
  const auth = secret === undefined || secret === '' ? '' : `:${encodeURIComponent(secret)}@`;
  return `kvstack://${auth}${shownHost}:${port}`;
}
