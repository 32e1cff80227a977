import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError } from '../shared/config-error.ts';
import { Secret } from '../shared/secret.ts';

// The backend's HTTPS (SPEC §8): BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE, PEM. Every
// message names the variable and the path, never a byte of the key. Read when the config
// loads (so a bad pair stops the start) and again by the service on SIGHUP and on a change.

/** A certificate (leaf first, then any intermediates) and its key, as PEM, checked to match. */
export interface BackendTlsPair {
  readonly cert: string;
  readonly key: Secret;
  /** The leaf's notAfter, in seconds since the epoch. */
  readonly expiresAt: number;
}

export interface BackendTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly certEnv: string;
  readonly keyEnv: string;
}

const invalid = (env: string, path: string, why: string): ConfigError => new ConfigError(`${env}=${JSON.stringify(path)} is invalid: ${why}`);

function readPem(env: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw invalid(env, path, `cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** Whether HTTPS is on: both files named, or neither; one alone is an error naming the other. */
export function backendTlsOn({ certFile, keyFile, certEnv, keyEnv }: BackendTlsFiles): boolean {
  if (certFile === '' && keyFile === '') return false;
  if (certFile === '') throw new ConfigError(`${keyEnv} is set but ${certEnv} is not: HTTPS needs both the certificate and its key`);
  if (keyFile === '') throw new ConfigError(`${certEnv} is set but ${keyEnv} is not: HTTPS needs both the certificate and its key`);
  return true;
}

/** Reads both files and checks them: a PEM certificate that parses, a PEM key that loads and matches it (OpenSSL's own check). */
export function readBackendTls({ certFile, keyFile, certEnv, keyEnv }: BackendTlsFiles): BackendTlsPair {
  const cert = readPem(certEnv, certFile);
  const key = readPem(keyEnv, keyFile);
  if (!cert.includes('-----BEGIN CERTIFICATE-----')) throw invalid(certEnv, certFile, 'no PEM certificate in it (-----BEGIN CERTIFICATE-----)');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch {
    throw invalid(certEnv, certFile, 'its first PEM certificate does not parse');
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) throw invalid(keyEnv, keyFile, 'no PEM private key in it (-----BEGIN … PRIVATE KEY-----)');
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    // OpenSSL's message names no key material; it is still not echoed, only recognised.
    if (/key values mismatch/i.test((err as Error).message)) throw invalid(keyEnv, keyFile, `the key does not match the certificate of ${certEnv}=${JSON.stringify(certFile)}`);
    throw invalid(keyEnv, keyFile, 'the key does not load (encrypted, or not a private key)');
  }
  return Object.freeze({ cert, key: new Secret(key), expiresAt: Math.floor(leaf.validToDate.getTime() / 1000) });
}
