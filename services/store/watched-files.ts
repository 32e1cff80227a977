import { fileStamp } from '../shared/file-stamp.ts';
import type { Logger } from '../shared/logger.ts';

/**
 * How often the store looks at its secret files (the password file, the TLS certificate,
 * key and CA) for a change: SPEC §8 says at least every 10 s. A stat of each path, which
 * follows its symlinks (fileStamp): Kubernetes updates a mounted Secret by swapping a symlink and
 * sends no signal.
 */
export const SECRET_FILE_POLL_MS = 5000;

/** Why a secret file is read again: the signal, or a change seen on disk. */
export type ReloadReason = 'SIGHUP' | 'file changed';

/**
 * The one owner of "watched secret files": a set of paths stamped together, looked at every
 * pollMs, and `onChange` called when any of them changed since the last stamp. The reader
 * calls stamp() before it reads, so a broken version is tried once, not at every poll, and
 * files rewritten one after another (a certificate, then its key) are read again together.
 */
export class WatchedFiles {
  readonly #paths: readonly string[];
  readonly #timer: NodeJS.Timeout;
  #stamp: string;

  constructor(paths: readonly string[], onChange: () => void, pollMs = SECRET_FILE_POLL_MS) {
    this.#paths = paths;
    this.#stamp = this.#current();
    this.#timer = setInterval(() => {
      if (this.#current() !== this.#stamp) onChange();
    }, pollMs);
    this.#timer.unref();
  }

  /** Takes the files' state as read: only a change after this calls onChange. */
  stamp(): void {
    this.#stamp = this.#current();
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #current(): string {
    return this.#paths.map(fileStamp).join('|');
  }
}

/**
 * A failed reload, logged once until a reload succeeds (a file left broken is not logged
 * at every poll, nor the same failure at every SIGHUP); every failure is still counted by
 * the caller.
 */
export class ReloadFailureLog {
  readonly #logger: Logger;
  readonly #message: string;
  #last: string | undefined;

  /** `message`: the log line's text (what failed and that the old material stays). */
  constructor(logger: Logger, message: string) {
    this.#logger = logger;
    this.#message = message;
  }

  failed(reason: ReloadReason, err: string): void {
    if (err !== this.#last) this.#logger.error({ reason, err }, this.#message);
    this.#last = err;
  }

  succeeded(): void {
    this.#last = undefined;
  }
}
