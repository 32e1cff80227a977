import { fileStamp } from './file-stamp.ts';
import type { Logger } from './logger.ts';

/**
 * How often watched files are looked at (SPEC §8: at least every 10 s). A stat of each
 * path, which follows its symlinks (fileStamp): Kubernetes updates a mounted Secret by
 * swapping a symlink and sends no signal.
 */
export const WATCH_POLL_MS = 5000;

export type ReloadReason = 'SIGHUP' | 'file changed';

export interface WatchedFilesOptions<T> {
  /** What the files hold, for log lines ("backend tokens", "store password", "store TLS certificate, key and CA"). */
  readonly what: string;
  readonly paths: readonly string[];
  /** Reads and checks the files; throws (a ConfigError naming the variable) when they are unusable. */
  readonly load: () => T;
  /** Puts what load() gave in use (may throw: a failure too); returns fields for the log line (never a secret). */
  readonly apply: (value: T) => Record<string, unknown>;
  readonly logger: Logger;
  /** Told of each reload that failed (a counter). */
  readonly onFailure: () => void;
  readonly pollMs?: number;
}

/**
 * The one owner of the secret files the services watch (the store's password file and
 * TLS files, the backend's tokens and certificates): read again on SIGHUP (reload()) and
 * when one of them changes on disk. The files are stamped together before they are read,
 * so a broken version is tried once, not at every poll, and files rewritten one after
 * another (a certificate, then its key) are read again together at the next change. A
 * reload that fails keeps what is in use, is counted, and is logged once until a reload
 * succeeds.
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
    return this.#options.paths.map(fileStamp).join('|');
  }

  /** Reads the files again; true when what they hold is now in use. */
  reload(reason: ReloadReason): boolean {
    const { what, load, apply, logger, onFailure } = this.#options;
    this.#stamp = this.#stampAll();
    let fields: Record<string, unknown>;
    try {
      fields = apply(load());
    } catch (err) {
      onFailure();
      const message = err instanceof Error ? err.message : String(err);
      if (message !== this.#lastFailure) logger.error({ reason, err: message }, `${what} reload failed: the ones in use stay`);
      this.#lastFailure = message;
      return false;
    }
    this.#lastFailure = undefined;
    logger.info({ reason, ...fields }, `${what} reloaded`);
    return true;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
