import { createHash, timingSafeEqual } from 'node:crypto';
import type { Secret } from '../../shared/secret.ts';

/** Failed AUTH attempts after which the store closes the connection (SPEC §8). */
export const MAX_AUTH_FAILURES = 3;

const digestOf = (bytes: Uint8Array): Buffer => createHash('sha256').update(bytes).digest();

/**
 * The store's password, held as its SHA-256 digest, and the check of an AUTH attempt.
 * Both sides of the comparison are digests of the same length, compared with
 * timingSafeEqual: how long a check takes says nothing of how much of the password an
 * attempt got right, nor of the password's length. Without a password every connection
 * is authenticated from the start and AUTH is refused as not enabled.
 */
export class PasswordCheck {
  #digest: Buffer | undefined;

  constructor(password: Secret | undefined) {
    this.#digest = password === undefined ? undefined : digestOf(Buffer.from(password.reveal(), 'utf8'));
  }

  get enabled(): boolean {
    return this.#digest !== undefined;
  }

  /** Whether the attempt buf[start, end) is the password (false when none is set). */
  matches(buf: Buffer, start: number, end: number): boolean {
    const expected = this.#digest;
    if (expected === undefined) return false;
    return timingSafeEqual(digestOf(buf.subarray(start, end)), expected);
  }

  /**
   * A new password (the password file was read again): connections authenticated with
   * the old one stay so; new attempts are checked against this one. Returns whether it
   * differs from the one it replaces.
   */
  replace(password: Secret): boolean {
    const digest = digestOf(Buffer.from(password.reveal(), 'utf8'));
    const changed = this.#digest === undefined || !timingSafeEqual(digest, this.#digest);
    this.#digest = digest;
    return changed;
  }
}
