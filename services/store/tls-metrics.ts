import type { Registry } from 'prom-client';
import { Counter, Gauge } from '../shared/prometheus.ts';
import { HANDSHAKE_REASONS, type HandshakeReason } from '../shared/tls-handshake.ts';

/** The store's TLS counts (SPEC §8), kept as numbers and read by prom-client at scrape time. */
export class TlsMetrics {
  /** Reloads of the certificate, key or CA (SIGHUP or a change on disk) that failed: the material in use stayed. */
  reloadFailures = 0;
  readonly handshakeFailures: Record<HandshakeReason, number> = { plaintext: 0, certificate: 0, timeout: 0, other: 0 };
  /** notAfter of the certificate in use, unix seconds. */
  certExpiresAt = 0;
}

/**
 * Registers the TLS metrics of a store that speaks TLS (none without: an expiry gauge of 0
 * would read as a certificate long expired). kvstore_password_reload_failures_total counts
 * the password file's failed reloads; kvstore_tls_reload_failures_total the TLS files'.
 */
export function registerTlsMetrics(registry: Registry, m: TlsMetrics): void {
  const registers = [registry];
  new Counter({
    name: 'kvstore_tls_reload_failures_total',
    help: 'Reloads of STORE_TLS_CERT_FILE, STORE_TLS_KEY_FILE or STORE_TLS_CA_FILE (on SIGHUP or a change on disk) that failed: the certificate, key and CA in use stayed.',
    registers,
    collect() {
      this.reset();
      this.inc(m.reloadFailures);
    },
  });
  new Gauge({
    name: 'kvstore_tls_certificate_expiry_timestamp_seconds',
    help: 'When the certificate the store presents expires (its notAfter), unix seconds.',
    registers,
    collect() {
      this.set(m.certExpiresAt);
    },
  });
  new Counter({
    name: 'kvstore_tls_handshake_failures_total',
    help: 'Connections to STORE_PORT that failed the TLS handshake, by reason: plaintext (not TLS), certificate (a client certificate missing or refused), timeout, other.',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      for (const reason of HANDSHAKE_REASONS) this.inc({ reason }, m.handshakeFailures[reason]);
    },
  });
}
