import { TlsFileSource, type ClientTls } from '../client/client-tls.ts';
import { backendSettings } from '../config/config.ts';
import { flag } from '../config/setting-parsers.ts';
import { resolveClientTls } from '../config/tls-settings.ts';
import { ConfigError } from '../shared/config-error.ts';
import type { GlobalOptions } from './cli-args.ts';
import { UsageError } from './usage-error.ts';

/**
 * TLS to the store for `kv`: --tls and --tls-*-file (a file option implies --tls), else
 * KV_STORE_TLS and KV_STORE_TLS_*_FILE, as the backend reads them. Each file is taken from
 * its option, else from its variable; a message names whichever gave it.
 */
export function resolveCliTls(env: Record<string, string | undefined>, options: GlobalOptions): ClientTls | undefined {
  const variable = (name: string): string => env[name]?.trim() ?? '';
  try {
    const fromFlags = options.tls === true || options.tlsCaFile !== undefined || options.tlsCertFile !== undefined || options.tlsKeyFile !== undefined;
    const tlsEnv = backendSettings.storeTls.env;
    const settings = resolveClientTls({
      tls: fromFlags || flag(variable(tlsEnv) || 'false', tlsEnv),
      caFile: options.tlsCaFile ?? variable(backendSettings.storeTlsCaFile.env),
      certFile: options.tlsCertFile ?? variable(backendSettings.storeTlsCertFile.env),
      keyFile: options.tlsKeyFile ?? variable(backendSettings.storeTlsKeyFile.env),
      tlsEnv: fromFlags ? '--tls' : tlsEnv,
      caEnv: options.tlsCaFile !== undefined ? '--tls-ca-file' : backendSettings.storeTlsCaFile.env,
      certEnv: options.tlsCertFile !== undefined ? '--tls-cert-file' : backendSettings.storeTlsCertFile.env,
      keyEnv: options.tlsKeyFile !== undefined ? '--tls-key-file' : backendSettings.storeTlsKeyFile.env,
    });
    return settings && new TlsFileSource(settings.files);
  } catch (err) {
    throw err instanceof ConfigError ? new UsageError(err.message) : err;
  }
}
