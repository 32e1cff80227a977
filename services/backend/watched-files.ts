import { statSync } from 'node:fs';
import type { Logger } from '../shared/logger.ts';

/**
 * How often the files are looked at (SPEC §8: at least every 10 s). A stat of each path,
 * which follows its symlinks: when Kubernetes updates a mounted Secret it swaps the
 * `..data` symlink to a new directory and sends no signal, so the file under the path
 * changes identity (device, inode) even if its size and times look alike.
 */
export const WATCH_POLL_MS = 5000;

export type ReloadReason = 'SIGHUP' | 'file changed';

export interface WatchedFilesOptions<T> {
  /** What the files hold, for log lines ("backend tokens", "backend TLS certificate"). */
  readonly what: string;
  readonly paths: readonly string[];
  /** Reads and checks the files; throws (a ConfigError naming the variable) when they are unusable. */
  readonly load: () => T;
  /** Puts what load() gave in use; returns fields for the log line (never a secret). */
  readonly apply: (value: T) => Record<string, unknown>;
  readonly logger: Logger;
  /** Told of each reload that failed (a counter). */
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
 * Files read again on SIGHUP (reload()) and when one of them changes on disk. A reload
 * that fails keeps what is in use, is counted, and is logged once until a reload succeeds
 * (a file left broken is not logged at every poll). The store's password file works the
 * same way (services/store/password-file.ts); both could share this from services/shared.
 */
export class WatchedFiles<T> {
  readonly #options: WatchedFilesOptions<T>;
  readonly #timer: NodeJS.Timeout;
  #stamp: string;
  #lastFailure: string | undefined;

  constructor(options: WatchedFilesOptions<T>) {
    this.#options = options;
    this.#stamp = this.#stampAll();
    this.#timer = setInterval(() => {
      if (this.#stampAll() !== this.#stamp) this.reload('file changed');
    }, options.pollMs ?? WATCH_POLL_MS);
    this.#timer.unref();
  }

  #stampAll(): string {
    return this.#options.paths.map(stampOf).join('|');
  }

  /** Reads the files again; true when what they hold is now in use. */
  reload(reason: ReloadReason): boolean {
    const { what, load, apply, logger, onFailure } = this.#options;
    // Stamped before the read: a broken version is tried once, not at every poll.
    this.#stamp = this.#stampAll();
    let value: T;
    try {
      value = load();
    } catch (err) {
      onFailure();
      const message = err instanceof Error ? err.message : String(err);
      if (message !== this.#lastFailure) logger.error({ reason, err: message }, `${what} reload failed: the ones in use stay`);
      this.#lastFailure = message;
      return false;
    }
    this.#lastFailure = undefined;
    logger.info({ reason, ...apply(value) }, `${what} reloaded`);
    return true;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
