import type { Secret } from '../shared/secret.ts';
import { certAndKeyGiven, readTlsMaterial, type CertAndKeyFiles } from './tls-settings.ts';

// The backend's HTTPS (SPEC §8): BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE, PEM, read
// and checked by the same reader as the store's TLS files (tls-settings.ts): every message
// names the variable and the path, never a byte of the key. Read when the config loads (so
// a bad pair stops the start) and again by the service on SIGHUP and on a change.

/** A certificate (leaf first, then any intermediates) and its key, as PEM, checked to match. */
export interface BackendTlsPair {
  readonly cert: string;
  readonly key: Secret;
  /** The leaf's notAfter, in seconds since the epoch. */
  readonly expiresAt: number;
}

export type BackendTlsFiles = CertAndKeyFiles;

/** Whether HTTPS is on: both files named, or neither; one alone is an error naming the other. */
export function backendTlsOn(files: BackendTlsFiles): boolean {
  return certAndKeyGiven(files, 'HTTPS needs both the certificate and its key');
}

/** Reads both files and checks them: a PEM certificate that parses, a PEM key that loads and matches it (OpenSSL's own check). */
export function readBackendTls({ certFile, keyFile, certEnv, keyEnv }: BackendTlsFiles): BackendTlsPair {
  const material = readTlsMaterial({ cert: { path: certFile, env: certEnv }, key: { path: keyFile, env: keyEnv } });
  return Object.freeze({ cert: material.cert!, key: material.key!, expiresAt: material.certExpiresAt! });
}
