import { backendSettings } from '../config/config.ts';
import { passwordValue, readPasswordFile, resolvePassword } from '../config/password-settings.ts';
import { ConfigError } from '../shared/config-error.ts';
import type { Secret } from '../shared/secret.ts';
import { UsageError } from './usage-error.ts';

/**
 * The store's password for `kv`: `--password-file`, else KV_STORE_PASSWORD_FILE or
 * KV_STORE_PASSWORD, as the backend reads them. There is no flag that takes the password
 * itself: a command line is visible to every user of the machine (`ps`), and stays in the
 * shell's history.
 */
export function resolveCliPassword(env: Record<string, string | undefined>, passwordFile: string | undefined): Secret | undefined {
  try {
    if (passwordFile !== undefined) return readPasswordFile(passwordFile, '--password-file');
    const variable = env[backendSettings.storePassword.env] ?? '';
    return resolvePassword({
      password: passwordValue(variable, backendSettings.storePassword.env),
      passwordFile: env[backendSettings.storePasswordFile.env]?.trim() ?? '',
      passwordEnv: backendSettings.storePassword.env,
      passwordFileEnv: backendSettings.storePasswordFile.env,
    });
  } catch (err) {
    throw err instanceof ConfigError ? new UsageError(err.message) : err;
  }
}
