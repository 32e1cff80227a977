import { ConfigError } from './config-error.ts';

/** The settings a listener was bound from, to name them when binding fails. */
export interface BindSettings {
  readonly hostEnv: string;
  readonly host: string;
  readonly portEnv: string;
  readonly port: number;
}

/**
 * A failed listen() as a message naming the setting to fix, instead of a raw system
 * error: a host that does not resolve or is not this machine's names the host variable,
 * a port in use or forbidden names the port variable.
 */
export function bindError(err: unknown, { hostEnv, host, portEnv, port }: BindSettings): Error {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const detail = err instanceof Error ? err.message : String(err);
  const hostIs = `${hostEnv}=${JSON.stringify(host)}`;
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return new ConfigError(`${hostIs} cannot be listened on: the name does not resolve to an address (${detail})`);
    case 'EADDRNOTAVAIL':
      return new ConfigError(`${hostIs} cannot be listened on: it is not an address of this machine (${detail})`);
    case 'EADDRINUSE':
      return new ConfigError(`${portEnv}=${port} cannot be listened on: the port is already in use on ${host} (${detail})`);
    case 'EACCES':
      return new ConfigError(`${portEnv}=${port} cannot be listened on: this process may not bind it (ports below 1024 need privileges) (${detail})`);
    default:
      return new ConfigError(`${hostEnv}=${JSON.stringify(host)} ${portEnv}=${port} cannot be listened on: ${detail}`);
  }
}
