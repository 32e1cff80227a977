import { ConfigError, hostPort, type HostPort } from '../shared/config.ts';
import { UsageError } from './usage-error.ts';

export const DEFAULT_STORE = '127.0.0.1:8765';

/**
 * The store to talk to: `KV_STORE` (host:port, as the backend reads it), then
 * `--host` / `--port` override either half.
 */
export function resolveStoreAddress(env: Record<string, string | undefined>, host?: string, port?: string): HostPort {
  let base: HostPort;
  try {
    base = hostPort(env.KV_STORE?.trim() || DEFAULT_STORE, 'KV_STORE');
  } catch (err) {
    throw new UsageError(err instanceof ConfigError ? err.message : String(err));
  }
  let resolvedPort = base.port;
  if (port !== undefined) {
    if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) throw new UsageError(`--port ${JSON.stringify(port)}: expected a port from 1 to 65535`);
    resolvedPort = Number(port);
  }
  if (host !== undefined && !/^[A-Za-z0-9.\-:_[\]]+$/.test(host)) throw new UsageError(`--host ${JSON.stringify(host)}: expected a hostname or IP address`);
  return { host: host ?? base.host, port: resolvedPort };
}

/** host:port for messages and the prompt (IPv6 literals in brackets). */
export function formatAddress({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
