import type { SecureContextOptions } from 'node:tls';
import { readTlsMaterial, type StoreTlsSettings, type TlsMaterial } from '../config/tls-settings.ts';
import type { Logger } from '../shared/logger.ts';
import type { TlsMetrics } from './tls-metrics.ts';
import { ReloadFailureLog, WatchedFiles, type ReloadReason } from './watched-files.ts';

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
  /** How often the files are looked at (default SECRET_FILE_POLL_MS). */
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
  readonly #options: StoreTlsOptions;
  readonly #watch: WatchedFiles;
  readonly #failures: ReloadFailureLog;
  #material: TlsMaterial;

  constructor(options: StoreTlsOptions) {
    this.#options = options;
    this.#material = options.settings.material;
    options.metrics.certExpiresAt = this.#material.certExpiresAt ?? 0;
    this.#failures = new ReloadFailureLog(options.logger, 'store TLS reload failed: the certificate, key and CA in use stay');
    const { cert, key, ca } = options.settings.files;
    const paths = [cert, key, ca].filter((f) => f !== undefined).map((f) => f.path);
    this.#watch = new WatchedFiles(paths, () => this.reload('file changed'), options.pollMs);
  }

  /** The material in use (the store's own readiness probe presents its certificate). */
  get material(): TlsMaterial {
    return this.#material;
  }

  /** Reads the files again; true when their material is now in use. */
  reload(reason: ReloadReason): boolean {
    const { settings, logger, metrics, apply } = this.#options;
    this.#watch.stamp();
    let material: TlsMaterial;
    try {
      material = readTlsMaterial(settings.files);
      apply(secureContextOf(material));
    } catch (err) {
      metrics.reloadFailures++;
      this.#failures.failed(reason, err instanceof Error ? err.message : String(err));
      return false;
    }
    this.#failures.succeeded();
    this.#material = material;
    metrics.certExpiresAt = material.certExpiresAt ?? 0;
    const expires = material.certExpiresAt === undefined ? undefined : new Date(material.certExpiresAt * 1000).toISOString();
    logger.info({ reason, certFile: settings.files.cert?.path, expires }, 'store TLS certificate, key and CA reloaded: new connections get them');
    return true;
  }

  close(): void {
    this.#watch.close();
  }
}
