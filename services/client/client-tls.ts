import type { ConnectionOptions } from 'node:tls';
import { readTlsMaterial, type TlsFiles, type TlsMaterial } from '../config/tls-settings.ts';
import { fileStamp } from '../shared/file-stamp.ts';

/** The TLS options of one connection to the store: its CA, certificate and key, and how the store's identity is checked. */
export type StoreTlsConnectOptions = Pick<ConnectionOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername' | 'checkServerIdentity'>;

/**
 * A connection to the store over TLS (KV_STORE_TLS): asked for its options at every
 * connect, so a reconnect after a rotation uses the new client certificate.
 */
export interface ClientTls {
  connectOptions(): StoreTlsConnectOptions;
}

/**
 * TLS from PEM files (KV_STORE_TLS_CA_FILE, _CERT_FILE, _KEY_FILE), read again at a
 * connect once any of them changed on disk (a stat each, which follows symlinks: a
 * Kubernetes Secret's swap is seen). A version that does not load (a certificate rewritten
 * before its key) leaves the last good one in use until the files agree again.
 */
export class TlsFileSource implements ClientTls {
  readonly #files: TlsFiles;
  readonly #paths: readonly string[];
  #stamp: string | undefined;
  #material: TlsMaterial | undefined;

  /** Reads the files now: throws a ConfigError naming the variable when one does not load. */
  constructor(files: TlsFiles) {
    this.#files = files;
    this.#paths = [files.ca, files.cert, files.key].filter((f) => f !== undefined).map((f) => f.path);
    this.#read(true);
  }

  /** From paths (PEM); a message about a file names its option (caFile, certFile, keyFile) and path. */
  static fromPaths({ caFile, certFile, keyFile }: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string }): TlsFileSource {
    const file = (path: string | undefined, env: string) => (path === undefined ? undefined : { path, env });
    return new TlsFileSource({ ca: file(caFile, 'caFile'), cert: file(certFile, 'certFile'), key: file(keyFile, 'keyFile') });
  }

  connectOptions(): StoreTlsConnectOptions {
    this.#read(false);
    const m = this.#material!;
    return { ca: m.ca, cert: m.cert, key: m.key?.reveal() };
  }

  #read(first: boolean): void {
    const stamp = this.#paths.map(fileStamp).join('|');
    if (stamp === this.#stamp) return;
    try {
      this.#material = readTlsMaterial(this.#files);
      this.#stamp = stamp;
    } catch (err) {
      if (first) throw err;
      // Kept: the last material that loaded (tried again at the next connect).
    }
  }
}

/** TLS with material in memory (the store's own readiness probe: its certificate and key). */
export class TlsMaterialSource implements ClientTls {
  readonly #options: () => StoreTlsConnectOptions;

  constructor(options: () => StoreTlsConnectOptions) {
    this.#options = options;
  }

  connectOptions(): StoreTlsConnectOptions {
    return this.#options();
  }
}
