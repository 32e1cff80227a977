import { cryptoModule } from '../../shared/builtins.ts';
import type { Secret } from '../../shared/secret.ts';

/** Failed AUTH attempts after which the store closes the connection (SPEC §8). */
export const MAX_AUTH_FAILURES = 3;

const digestOf = (bytes: Uint8Array): Buffer => cryptoModule().createHash('sha256').update(bytes).digest();

const secretDigest = (secret: Secret): Buffer => digestOf(Buffer.from(secret.reveal(), 'utf8'));

/**
 * The store's password, held as its SHA-256 digest, and the check of an AUTH attempt;
 * during a rotation also the previous password, accepted as well. Both sides of each
 * comparison are digests of the same length, compared with timingSafeEqual, and an attempt
 * is compared with every password held: how long a check takes says nothing of how much of
 * a password an attempt got right, nor of its length, nor of which one it matched. Without
 * a password every connection is authenticated from the start and AUTH is refused as not
 * enabled.
 */
export class PasswordCheck {
  /** The password's digest first, then the previous one's; empty: no password. */
  #digests: readonly Buffer[];

  constructor(password: Secret | undefined, previous?: Secret) {
    this.#digests = password === undefined ? [] : [password, ...(previous ? [previous] : [])].map(secretDigest);
  }

  get enabled(): boolean {
    return this.#digests.length > 0;
  }

  /** Passwords accepted: 0, 1, or 2 during a rotation. */
  get accepted(): number {
    return this.#digests.length;
  }

  /** Whether the attempt buf[start, end) is a password accepted (false when none is set). */
  matches(buf: Buffer, start: number, end: number): boolean {
    const attempt = digestOf(buf.subarray(start, end));
    let match = false;
    const { timingSafeEqual } = cryptoModule();
    for (const digest of this.#digests) match = timingSafeEqual(attempt, digest) || match;
    return match;
  }

  /**
   * New passwords (the password file was read again): connections authenticated before
   * stay so; new attempts are checked against these. Returns whether they differ from the
   * ones they replace.
   */
  replace(password: Secret, previous?: Secret): boolean {
    const digests = [password, ...(previous ? [previous] : [])].map(secretDigest);
    const { timingSafeEqual } = cryptoModule();
    const changed = digests.length !== this.#digests.length || digests.some((d, i) => !timingSafeEqual(d, this.#digests[i]!));
    this.#digests = digests;
    return changed;
  }
}
