import type { SecureContextOptions } from 'node:tls';
import { readTlsMaterial, type StoreTlsSettings, type TlsMaterial } from '../config/tls-settings.ts';
import type { Logger } from '../shared/logger.ts';
import type { TlsMetrics } from './tls-metrics.ts';
import { WatchedFiles, type ReloadReason } from '../shared/watched-files.ts';

/** A secure context's options for `material`: what the listener presents and trusts. */
export function secureContextOf(material: TlsMaterial): SecureContextOptions {
  return { cert: material.cert, key: material.key?.reveal(), ca: material.ca };
}

export interface StoreTlsOptions {
  readonly settings: StoreTlsSettings;
  readonly logger: Logger;
  readonly metrics: TlsMetrics;
  /** Puts new material in use for the connections accepted from now on (server.setSecureContext). */
  readonly apply: (context: SecureContextOptions) => void;
  /** How often the files are looked at (default WATCH_POLL_MS). */
  readonly pollMs?: number;
}

/**
 * The store's certificate, key and CA: the material in use, read again on SIGHUP (reload())
 * and when any of the files changes on disk. New material goes to the listener
 * (setSecureContext): connections accepted from then on get it, those already open keep
 * their session, so nothing is dropped. A reload that fails (an unreadable file, a key
 * that does not match the certificate, a file half-written) keeps the material in use, is
 * counted in kvstore_tls_reload_failures_total and logged once until a reload succeeds.
 */
export class StoreTls {
  readonly #watch: WatchedFiles<TlsMaterial>;
  #material: TlsMaterial;

  constructor({ settings, logger, metrics, apply, pollMs }: StoreTlsOptions) {
    this.#material = settings.material;
    metrics.certExpiresAt = this.#material.certExpiresAt ?? 0;
    const { cert, key, ca } = settings.files;
    this.#watch = new WatchedFiles({
      what: 'store TLS certificate, key and CA',
      paths: [cert, key, ca].filter((f) => f !== undefined).map((f) => f.path),
      load: () => readTlsMaterial(settings.files),
      apply: (material) => {
        apply(secureContextOf(material));
        this.#material = material;
        metrics.certExpiresAt = material.certExpiresAt ?? 0;
        const expires = material.certExpiresAt === undefined ? undefined : new Date(material.certExpiresAt * 1000).toISOString();
        return { certFile: cert?.path, expires };
      },
      logger,
      onFailure: () => metrics.reloadFailures++,
      pollMs,
    });
  }

  /** The material in use (the store's own readiness probe presents its certificate). */
  get material(): TlsMaterial {
    return this.#material;
  }

  /** Reads the files again; true when their material is now in use. */
  reload(reason: ReloadReason): boolean {
    return this.#watch.reload(reason);
  }

  close(): void {
    this.#watch.close();
  }
}
