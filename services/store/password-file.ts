import { readPasswordFile } from '../config/password-settings.ts';
import type { Logger } from '../shared/logger.ts';
import type { PasswordCheck } from './network/password-check.ts';
import { ReloadFailureLog, WatchedFiles, type ReloadReason } from './watched-files.ts';

export interface PasswordFileOptions {
  readonly path: string;
  /** The variable that named it, for messages (STORE_PASSWORD_FILE). */
  readonly env: string;
  readonly check: PasswordCheck;
  readonly logger: Logger;
  /** Told of each reload that failed (kvstore_password_reload_failures_total). */
  readonly onFailure: () => void;
  /** How often the file is looked at (default SECRET_FILE_POLL_MS). */
  readonly pollMs?: number;
}

/**
 * The store's password file, read again on SIGHUP (reload()) and when it changes on disk
 * (WatchedFiles). A new password applies to AUTH attempts from then on; connections that
 * authenticated with the old one stay authenticated, so nothing is dropped. A reload that
 * fails (an unreadable, empty or multi-line file) keeps the password in use, is counted,
 * and is logged once until a reload succeeds.
 */
export class PasswordFile {
  readonly #options: PasswordFileOptions;
  readonly #watch: WatchedFiles;
  readonly #failures: ReloadFailureLog;

  constructor(options: PasswordFileOptions) {
    this.#options = options;
    this.#failures = new ReloadFailureLog(options.logger, 'store password reload failed: the current password stays in use');
    this.#watch = new WatchedFiles([options.path], () => this.reload('file changed'), options.pollMs);
  }

  /** Reads the file again; true when it now holds a usable password (the one in use from now on). */
  reload(reason: ReloadReason): boolean {
    const { path, env, check, logger, onFailure } = this.#options;
    this.#watch.stamp();
    let password;
    try {
      password = readPasswordFile(path, env);
    } catch (err) {
      onFailure();
      this.#failures.failed(reason, err instanceof Error ? err.message : String(err));
      return false;
    }
    this.#failures.succeeded();
    const changed = check.replace(password);
    logger.info({ reason, path, changed }, changed ? 'store password reloaded: new connections must send the new one' : 'store password file read again: unchanged');
    return true;
  }

  close(): void {
    this.#watch.close();
  }
}
