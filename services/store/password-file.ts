import { readPasswords, type FilePasswords } from '../config/password-settings.ts';
import type { Logger } from '../shared/logger.ts';
import { WatchedFiles, type ReloadReason } from '../shared/watched-files.ts';
import type { PasswordCheck } from './network/password-check.ts';

export interface PasswordFileOptions {
  readonly path: string;
  /** The variable that named it, for messages (STORE_PASSWORD_FILE). */
  readonly env: string;
  readonly check: PasswordCheck;
  readonly logger: Logger;
  /** Told of each reload that failed (kvstore_password_reload_failures_total). */
  readonly onFailure: () => void;
  /** How often the file is looked at (default WATCH_POLL_MS). */
  readonly pollMs?: number;
}

/**
 * The store's password file, read again on SIGHUP (reload()) and when it changes on disk
 * (WatchedFiles). A new password applies to AUTH attempts from then on; connections that
 * authenticated with the old one stay authenticated, so nothing is dropped. During a
 * rotation the file's second line is the previous password, accepted too. A reload that
 * fails (an unreadable or empty file, more than two lines) keeps the passwords in use, is
 * counted, and is logged once until a reload succeeds.
 */
export class PasswordFile {
  readonly #watch: WatchedFiles<FilePasswords>;

  constructor({ path, env, check, logger, onFailure, pollMs }: PasswordFileOptions) {
    this.#watch = new WatchedFiles({
      what: 'store password',
      paths: [path],
      load: () => readPasswords(path, env),
      // Whether they changed and how many are accepted, never a password.
      apply: ({ password, previous }) => ({ path, changed: check.replace(password, previous), accepted: check.accepted }),
      logger,
      onFailure,
      pollMs,
    });
  }

  /** Reads the file again; true when it now holds a usable password (the one in use from now on). */
  reload(reason: ReloadReason): boolean {
    return this.#watch.reload(reason);
  }

  close(): void {
    this.#watch.close();
  }
}
