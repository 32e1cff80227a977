import { fs } from '../shared/builtins.ts';
import { cryptoModule, tlsModule } from '../shared/builtins.ts';
import type { X509Certificate } from 'node:crypto';
import { ConfigError } from '../shared/config-error.ts';
import { Secret } from '../shared/secret.ts';

// The store's TLS (SPEC §8) and a client's TLS to the store, as their settings give them:
// PEM files named by variables. Every message names the variable and the file's path,
// never a key's bytes. The files are read here at start-up, so a bad one stops the start;
// the store reads them again on SIGHUP and on a change (store/tls-reload.ts), a client at
// each connection (client/tls-files.ts).

/** STORE_TLS_CLIENT_AUTH: whether a client must present a certificate signed by STORE_TLS_CA_FILE. */
export type ClientAuthMode = 'none' | 'optional' | 'require';

/** The parser of a PEM-file variable: its path, '' = none (read by the loaders below). */
export function pemFilePath(raw: string): string {
  return raw;
}

/** A certificate (chain), its key and the CA bundle that checks the peer, as PEM. */
export interface TlsMaterial {
  /** The certificate, leaf first, then any intermediates. */
  readonly cert: string | undefined;
  readonly key: Secret | undefined;
  readonly ca: string | undefined;
  /** The leaf certificate's notAfter, unix seconds (undefined without a certificate). */
  readonly certExpiresAt: number | undefined;
}

/** One PEM file and the variable that named it. */
export interface PemFile {
  readonly path: string;
  readonly env: string;
}

/** Which files make up a TLS identity (certificate and key) and trust (CA); each optional. */
export interface TlsFiles {
  readonly cert?: PemFile | undefined;
  readonly key?: PemFile | undefined;
  readonly ca?: PemFile | undefined;
}

function invalid(file: PemFile, why: string): ConfigError {
  return new ConfigError(`${file.env}=${JSON.stringify(file.path)} is invalid: ${why}`);
}

function readPem(file: PemFile): string {
  try {
    return fs.readFileSync(file.path, 'utf8');
  } catch (err) {
    throw invalid(file, `cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** Reads the certificate's notAfter, or says why it is no PEM certificate. */
function certificateOf(file: PemFile, pem: string): X509Certificate {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw invalid(file, 'no PEM certificate in it (-----BEGIN CERTIFICATE-----)');
  try {
    return new (cryptoModule().X509Certificate)(pem);
  } catch {
    throw invalid(file, 'its first PEM certificate does not parse');
  }
}

/**
 * Reads and checks the files: each readable, certificates that parse, a key that parses
 * and matches its certificate (OpenSSL's own check, through a secure context). Throws a
 * ConfigError naming the variable; never a key's bytes.
 */
export function readTlsMaterial(files: TlsFiles): TlsMaterial {
  const cert = files.cert === undefined ? undefined : readPem(files.cert);
  const leaf = cert === undefined ? undefined : certificateOf(files.cert!, cert);
  const keyPem = files.key === undefined ? undefined : readPem(files.key);
  if (keyPem !== undefined && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(keyPem)) throw invalid(files.key!, 'no PEM private key in it (-----BEGIN … PRIVATE KEY-----)');
  const ca = files.ca === undefined ? undefined : readPem(files.ca);
  if (ca !== undefined) certificateOf(files.ca!, ca);
  if (cert !== undefined && keyPem !== undefined) {
    try {
      tlsModule().createSecureContext({ cert, key: keyPem });
    } catch (err) {
      const reason = (err as Error).message;
      if (/key values mismatch/i.test(reason)) throw invalid(files.key!, `the key does not match the certificate of ${files.cert!.env}=${JSON.stringify(files.cert!.path)}`);
      throw invalid(files.key!, 'the key does not load (encrypted, or not a private key)');
    }
  }
  if (ca !== undefined) {
    try {
      tlsModule().createSecureContext({ ca });
    } catch {
      throw invalid(files.ca!, 'its certificates do not load');
    }
  }
  return Object.freeze({
    cert,
    key: keyPem === undefined ? undefined : new Secret(keyPem),
    ca,
    certExpiresAt: leaf === undefined ? undefined : Math.floor(Date.parse(leaf.validTo) / 1000),
  });
}

/** Where a certificate and its key are named: their paths ('' = not set) and the settings that name them. */
export interface CertAndKeyFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly certEnv: string;
  readonly keyEnv: string;
}

/** Whether a certificate and its key are given: both, or neither; one alone is an error naming the other and saying what `needs` both. */
export function certAndKeyGiven({ certFile, keyFile, certEnv, keyEnv }: CertAndKeyFiles, needs: string): boolean {
  if (certFile === '' && keyFile === '') return false;
  if (certFile === '') throw new ConfigError(`${keyEnv} is set but ${certEnv} is not: ${needs}`);
  if (keyFile === '') throw new ConfigError(`${certEnv} is set but ${keyEnv} is not: ${needs}`);
  return true;
}

/** The store's TLS files and how it checks clients, with the material read at start-up. */
export interface StoreTlsSettings {
  readonly files: TlsFiles;
  readonly clientAuth: ClientAuthMode;
  readonly material: TlsMaterial;
}

export interface StoreTlsEnv {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  readonly clientAuth: ClientAuthMode;
  readonly certEnv: string;
  readonly keyEnv: string;
  readonly caEnv: string;
  readonly clientAuthEnv: string;
}

/**
 * The store's TLS, or undefined when it is off: certificate and key together, a CA only
 * with a client-auth mode and a mode only with a CA, nothing of it without the certificate.
 */
export function resolveStoreTls(s: StoreTlsEnv): StoreTlsSettings | undefined {
  if (!certAndKeyGiven(s, 'TLS needs both the certificate and its key')) {
    const stray = s.caFile !== '' ? s.caEnv : s.clientAuth !== 'none' ? s.clientAuthEnv : undefined;
    if (stray !== undefined) throw new ConfigError(`${stray} is set but ${s.certEnv} and ${s.keyEnv} are not: client certificates are checked only when the store speaks TLS`);
    return undefined;
  }
  if (s.clientAuth !== 'none' && s.caFile === '') {
    throw new ConfigError(`${s.clientAuthEnv}=${s.clientAuth} is invalid without ${s.caEnv}: client certificates are checked against that CA`);
  }
  if (s.clientAuth === 'none' && s.caFile !== '') {
    throw new ConfigError(`${s.caEnv} is set but ${s.clientAuthEnv} is none: set it to require or optional to check client certificates, or unset ${s.caEnv}`);
  }
  const files: TlsFiles = {
    cert: { path: s.certFile, env: s.certEnv },
    key: { path: s.keyFile, env: s.keyEnv },
    ca: s.caFile === '' ? undefined : { path: s.caFile, env: s.caEnv },
  };
  return Object.freeze({ files, clientAuth: s.clientAuth, material: readTlsMaterial(files) });
}

/** A client's TLS to the store: the files it reads again at each connection. */
export interface ClientTlsSettings {
  readonly files: TlsFiles;
}

export interface ClientTlsEnv {
  readonly tls: boolean;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly tlsEnv: string;
  readonly caEnv: string;
  readonly certEnv: string;
  readonly keyEnv: string;
}

/**
 * A client's TLS, or undefined when it is off. The files are read once here so a missing
 * or mismatched one stops the start; the connections read them again (a rotated client
 * certificate is used by the next one).
 */
export function resolveClientTls(s: ClientTlsEnv): ClientTlsSettings | undefined {
  if (!s.tls) {
    const stray = [s.caFile !== '' && s.caEnv, s.certFile !== '' && s.certEnv, s.keyFile !== '' && s.keyEnv].find((e) => e !== false);
    if (stray) throw new ConfigError(`${stray} is set but ${s.tlsEnv} is not true: set ${s.tlsEnv}=true to connect to the store over TLS`);
    return undefined;
  }
  certAndKeyGiven(s, 'a client certificate needs its key');
  const files: TlsFiles = {
    ca: s.caFile === '' ? undefined : { path: s.caFile, env: s.caEnv },
    cert: s.certFile === '' ? undefined : { path: s.certFile, env: s.certEnv },
    key: s.keyFile === '' ? undefined : { path: s.keyFile, env: s.keyEnv },
  };
  readTlsMaterial(files);
  return Object.freeze({ files });
}
