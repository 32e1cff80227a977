import { fs } from '../shared/builtins.ts';
import { isIPv6 } from 'node:net';
import { dirname } from 'node:path';
import { ConfigError } from '../shared/config-error.ts';

// The parsers of one setting's raw value: each takes the value and the variable's name
// and returns the typed value or throws a ConfigError naming both. config.ts builds its
// tables from them and store-list.ts parses each shard's address with hostPort.

function fail(env: string, raw: string, expected: string): never {
  throw new ConfigError(`${env}=${JSON.stringify(raw)} is invalid: expected ${expected}`);
}

export function integer(min: number, max: number) {
  return (raw: string, env: string): number => {
    if (!/^\d+$/.test(raw)) fail(env, raw, `an integer from ${min} to ${max}`);
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min || n > max) fail(env, raw, `an integer from ${min} to ${max}`);
    return n;
  };
}

export function oneOf<const T extends string>(...values: T[]) {
  return (raw: string, env: string): T => {
    const v = raw.toLowerCase();
    if (!(values as string[]).includes(v)) fail(env, raw, `one of ${values.join(', ')}`);
    return v as T;
  };
}

export function host(raw: string, env: string): string {
  // A hostname or an IP literal; no scheme, no port, no spaces.
  if (!/^[A-Za-z0-9.\-:_[\]]+$/.test(raw)) fail(env, raw, 'a hostname or IP address');
  return raw;
}

export function flag(raw: string, env: string): boolean {
  const v = raw.toLowerCase();
  if (v !== 'true' && v !== 'false') fail(env, raw, 'true or false');
  return v === 'true';
}

/** A file path whose directory exists (checked once, at start-up); '' = off. */
export function snapshotPath(raw: string, env: string): string {
  if (raw === '') return '';
  const dir = dirname(raw);
  let isDir = false;
  try {
    isDir = fs.statSync(dir).isDirectory();
  } catch {
    // reported below
  }
  if (!isDir) fail(env, raw, `a file in an existing directory (${dir} is not one)`);
  try {
    if (fs.statSync(raw).isDirectory()) fail(env, raw, 'a file path, not a directory');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    // no file yet: the first start
  }
  return raw;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/**
 * `host:port`, with an IPv6 address in brackets (`[::1]:8765`). An unbracketed one is
 * refused: in `::1:8765` nothing says where the address ends (`::1` port 8765, or the
 * address `::1:8765` with the port missing).
 */
export function hostPort(raw: string, env: string): HostPort {
  const m = /^(\[[^\]]*\]|[^[\]]+):(\d+)$/.exec(raw);
  if (!m) fail(env, raw, 'host:port, with an IPv6 address in brackets as in [::1]:8765');
  const bracketed = m[1]!.startsWith('[');
  const address = bracketed ? m[1]!.slice(1, -1) : m[1]!;
  if (!bracketed && address.includes(':')) {
    throw new ConfigError(`${env}=${JSON.stringify(raw)} is invalid: an IPv6 address needs brackets, as in [::1]:8765 (ambiguous: ${JSON.stringify(raw)})`);
  }
  if (bracketed && !isIPv6(address)) fail(env, raw, '[IPv6 address]:port: brackets only around an IPv6 address');
  const port = Number(m[2]);
  if (port < 1 || port > 65535) fail(env, raw, 'host:port with a port from 1 to 65535');
  return Object.freeze({ host: host(address, env), port });
}
