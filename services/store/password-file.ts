import { statSync } from 'node:fs';
import { readPasswordFile } from '../config/password-settings.ts';
import type { Logger } from '../shared/logger.ts';
import type { PasswordCheck } from './network/password-check.ts';

/**
 * How often the password file is looked at (SPEC §8: at least every 10 s). A stat of the
 * path, which follows its symlinks: when Kubernetes updates a mounted Secret it swaps the
 * `..data` symlink to a new directory and sends no signal, so the file under the path
 * changes identity (device, inode) even if its size and times look alike.
 */
export const PASSWORD_POLL_MS = 5000;

export interface PasswordFileOptions {
  readonly path: string;
  /** The variable that named it, for messages (STORE_PASSWORD_FILE). */
  readonly env: string;
  readonly check: PasswordCheck;
  readonly logger: Logger;
  /** Told of each reload that failed (kvstore_password_reload_failures_total). */
  readonly onFailure: () => void;
  readonly pollMs?: number;
}

/** Identity and version of the file at `path` (after its symlinks), or the error a stat gives. */
function stampOf(path: string): string {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch (err) {
    return `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
}

/**
 * The store's password file, read again on SIGHUP (reload()) and when it changes on disk.
 * A new password applies to AUTH attempts from then on; connections that authenticated
 * with the old one stay authenticated, so nothing is dropped. A reload that fails (an
 * unreadable, empty or multi-line file) keeps the password in use, is counted, and is
 * logged once until a reload succeeds (a file left broken is not logged every poll).
 */
export class PasswordFile {
  readonly #options: PasswordFileOptions;
  readonly #timer: NodeJS.Timeout;
  #stamp: string;
  #lastFailure: string | undefined;

  constructor(options: PasswordFileOptions) {
    this.#options = options;
    this.#stamp = stampOf(options.path);
    this.#timer = setInterval(() => {
      if (stampOf(options.path) !== this.#stamp) this.reload('file changed');
    }, options.pollMs ?? PASSWORD_POLL_MS);
    this.#timer.unref();
  }

  /** Reads the file again; true when it now holds a usable password (the one in use from now on). */
  reload(reason: 'SIGHUP' | 'file changed'): boolean {
    const { path, env, check, logger, onFailure } = this.#options;
    // Stamped before the read: a broken version is tried once, not at every poll.
    this.#stamp = stampOf(path);
    let password;
    try {
      password = readPasswordFile(path, env);
    } catch (err) {
      onFailure();
      const message = err instanceof Error ? err.message : String(err);
      if (message !== this.#lastFailure) logger.error({ reason, err: message }, 'store password reload failed: the current password stays in use');
      this.#lastFailure = message;
      return false;
    }
    this.#lastFailure = undefined;
    const changed = check.replace(password);
    logger.info({ reason, path, changed }, changed ? 'store password reloaded: new connections must send the new one' : 'store password file read again: unchanged');
    return true;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
