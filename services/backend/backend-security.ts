import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http, httpsModule } from '../shared/builtins.ts';
import type { TLSSocket } from 'node:tls';
import type { Registry } from 'prom-client';
import { Counter, Gauge } from '../shared/prometheus.ts';
import { backendSettings, backendTlsFilesOf, type BackendConfig } from '../config/config.ts';
import { backendTlsOn, readBackendTls, type BackendTlsPair } from '../config/backend-tls.ts';
import { readTokensFile } from '../config/token-file.ts';
import { LogBudget } from '../shared/log-budget.ts';
import type { Logger } from '../shared/logger.ts';
import { HANDSHAKE_REASONS, HANDSHAKE_TIMEOUT_MS, handshakeReason, type HandshakeReason } from '../shared/tls-handshake.ts';
import { BearerAuth } from './bearer-auth.ts';
import { WatchedFiles, type ReloadReason } from '../shared/watched-files.ts';

export interface BackendSecurityOptions {
  readonly config: Pick<BackendConfig, 'tokensFile' | 'tlsCertFile' | 'tlsKeyFile'>;
  readonly registry: Registry;
  readonly logger: Logger;
  /** How often the files are looked at for a change (default WATCH_POLL_MS). */
  readonly pollMs?: number;
}

const HANDSHAKE_LOG_LINES_PER_MINUTE = 20;

/** The backend's tokens and HTTPS (SPEC §8), kept current from their files. */
export interface BackendSecurity {
  /** Undefined without BACKEND_TOKENS_FILE: every request is served. */
  readonly auth: BearerAuth | undefined;
  /** Whether PORT speaks HTTPS (BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE). */
  readonly https: boolean;
  /** The server of PORT: HTTPS with the certificate in use (a reload swaps it in), or plain HTTP. Call once. */
  createServer(app: (req: IncomingMessage, res: ServerResponse) => void): Server;
  /** Reads the files again (SIGHUP). */
  reload(reason: ReloadReason): void;
  close(): void;
}

/**
 * Reads BACKEND_TOKENS_FILE and the TLS pair, follows them on disk and on SIGHUP, and
 * registers what ops watch: kvbackend_tokens{scope} (the tokens in use),
 * kvbackend_tokens_reload_failures_total, and with HTTPS kvbackend_tls_reload_failures_total,
 * kvbackend_tls_certificate_expiry_timestamp_seconds and kvbackend_tls_handshake_failures_total. Nothing of a token or a key
 * reaches a metric or a log line: only counts, paths and dates.
 */
export function startBackendSecurity({ config, registry, logger, pollMs }: BackendSecurityOptions): BackendSecurity {
  let tokenFailures = 0;
  let tokens: Pick<WatchedFiles<never>, 'reload' | 'close'> | undefined;
  let auth: BearerAuth | undefined;
  if (config.tokensFile !== '') {
    const path = config.tokensFile;
    const load = () => readTokensFile(path, backendSettings.tokensFile.env);
    const bearer = new BearerAuth(load());
    auth = bearer;
    tokens = new WatchedFiles({
      what: 'backend tokens',
      paths: [path],
      load,
      apply: (table) => {
        bearer.replace(table);
        return { path, ...table.counts };
      },
      logger,
      onFailure: () => tokenFailures++,
      pollMs,
    });
  }
  // Registered with or without a tokens file, at zero without one, so rules and panels always find them.
  new Gauge({
    name: 'kvbackend_tokens',
    help: 'Bearer tokens in use from BACKEND_TOKENS_FILE, by scope (read or write); 0 without the setting.',
    labelNames: ['scope'],
    registers: [registry],
    collect() {
      this.set({ scope: 'read' }, auth?.table.counts.read ?? 0);
      this.set({ scope: 'write' }, auth?.table.counts.write ?? 0);
    },
  });
  new Counter({
    name: 'kvbackend_tokens_reload_failures_total',
    help: 'Reloads of BACKEND_TOKENS_FILE (on SIGHUP or a change on disk) that failed; the tokens in use stayed.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(tokenFailures);
    },
  });

  const tlsFiles = backendTlsFilesOf(config);
  let pair: BackendTlsPair | undefined = backendTlsOn(tlsFiles) ? readBackendTls(tlsFiles) : undefined;
  let tlsFailures = 0;
  let certificate: Pick<WatchedFiles<never>, 'reload' | 'close'> | undefined;
  if (pair) {
    // Only with HTTPS: an expiry of 0 would read as a certificate long expired.
    new Counter({
      name: 'kvbackend_tls_reload_failures_total',
      help: 'Reloads of BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE (on SIGHUP or a change on disk) that failed; the certificate and key in use stayed.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(tlsFailures);
      },
    });
    new Gauge({
      name: 'kvbackend_tls_certificate_expiry_timestamp_seconds',
      help: 'When the certificate PORT presents expires (its notAfter), in seconds since the epoch.',
      registers: [registry],
      collect() {
        this.set(pair!.expiresAt);
      },
    });
  }
  const expiry = (p: BackendTlsPair) => ({ expiresAt: new Date(p.expiresAt * 1000).toISOString() });
  const handshakeFailures = Object.fromEntries(HANDSHAKE_REASONS.map((r) => [r, 0])) as Record<HandshakeReason, number>;
  if (pair) {
    new Counter({
      name: 'kvbackend_tls_handshake_failures_total',
      help: 'Connections to PORT that failed the TLS handshake, by reason: plaintext (plain HTTP on the HTTPS port), certificate, timeout, other.',
      labelNames: ['reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const reason of HANDSHAKE_REASONS) this.inc({ reason }, handshakeFailures[reason]);
      },
    });
  }
  // A client causes one failure per connection it opens: logged at most this many a minute, all counted.
  const handshakeLog = new LogBudget(HANDSHAKE_LOG_LINES_PER_MINUTE, 60_000);

  return {
    auth,
    https: pair !== undefined,
    createServer(app) {
      if (!pair) return http.createServer(app);
      const server = httpsModule().createServer({ cert: pair.cert, key: pair.key.reveal(), handshakeTimeout: HANDSHAKE_TIMEOUT_MS }, app);
      server.on('tlsClientError', (err: Error, socket: TLSSocket) => {
        const reason = handshakeReason(err);
        handshakeFailures[reason]++;
        const allowed = handshakeLog.take();
        // OpenSSL's errors carry a short reason; their message is its whole error stack.
        if (allowed) logger.warn({ remote: socket.remoteAddress, reason, err: (err as { reason?: string }).reason ?? err.message, ...(allowed.suppressed > 0 ? { suppressed: allowed.suppressed } : {}) }, 'TLS handshake failed: connection closed');
        socket.destroy();
      });
      certificate = new WatchedFiles({
        what: 'backend TLS certificate',
        paths: [tlsFiles.certFile, tlsFiles.keyFile],
        load: () => readBackendTls(tlsFiles),
        apply: (next) => {
          // New connections get the new pair; those open keep the one they shook hands with.
          server.setSecureContext({ cert: next.cert, key: next.key.reveal() });
          pair = next;
          return { certFile: tlsFiles.certFile, ...expiry(next) };
        },
        logger,
        onFailure: () => tlsFailures++,
        pollMs,
      });
      logger.info({ certFile: tlsFiles.certFile, ...expiry(pair) }, 'backend HTTPS on');
      return server;
    },
    reload(reason) {
      if (!tokens && !certificate) logger.info('nothing to reload: no BACKEND_TOKENS_FILE, no BACKEND_TLS_CERT_FILE');
      tokens?.reload(reason);
      certificate?.reload(reason);
    },
    close() {
      tokens?.close();
      certificate?.close();
    },
  };
}
