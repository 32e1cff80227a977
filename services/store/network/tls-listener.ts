import type { Socket } from 'node:net';
import type { SecureContextOptions, Server, TLSSocket } from 'node:tls';
import { tlsModule } from '../../shared/builtins.ts';
import type { ClientAuthMode } from '../../config/tls-settings.ts';
import { LogBudget } from '../../shared/log-budget.ts';
import type { Logger } from '../../shared/logger.ts';
import { HANDSHAKE_TIMEOUT_MS, handshakeReason, type HandshakeReason } from '../../shared/tls-handshake.ts';
import type { TlsMetrics } from '../tls-metrics.ts';
/**
 * Handshake failures logged per minute; the rest are counted only (a client can cause one
 * per connection it opens). The metric counts every one.
 */
const HANDSHAKE_LOG_LINES_PER_MINUTE = 20;

/** TLS on the store's port: what it presents and trusts, how it checks clients, where failures go. */
export interface TlsListenerOptions {
  readonly context: SecureContextOptions;
  readonly clientAuth: ClientAuthMode;
  readonly metrics: TlsMetrics;
}

/**
 * The TLS listener of STORE_PORT. Client certificates are checked here, after the
 * handshake, in both modes (require: a missing or refused one closes the connection;
 * optional: a refused one does), so every refusal is counted and logged the same way;
 * Node's own rejectUnauthorized would drop a refused certificate silently. `onSecure`
 * gets each connection that passed; `onRaw` each TCP connection as it is accepted (so
 * the server can end handshakes still under way when it stops).
 */
export function createTlsListener(options: TlsListenerOptions, logger: Logger, onSecure: (socket: TLSSocket) => void, onRaw: (raw: Socket) => void): Server {
  const { clientAuth, metrics } = options;
  const budget = new LogBudget(HANDSHAKE_LOG_LINES_PER_MINUTE, 60_000);
  const failed = (reason: HandshakeReason, err: string, socket: TLSSocket): void => {
    metrics.handshakeFailures[reason]++;
    const allowed = budget.take();
    if (allowed === undefined) return;
    const suppressed = allowed.suppressed > 0 ? { suppressed: allowed.suppressed } : {};
    logger.warn({ remote: socket.remoteAddress, remotePort: socket.remotePort, reason, err, ...suppressed }, 'TLS handshake failed: connection closed');
  };
  const server = tlsModule().createServer(
    {
      ...options.context,
      requestCert: clientAuth !== 'none',
      rejectUnauthorized: false,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      noDelay: true,
      allowHalfOpen: true,
    },
    (socket) => {
      if (clientAuth !== 'none' && !socket.authorized) {
        const presented = Object.keys(socket.getPeerCertificate()).length > 0;
        if (clientAuth === 'require' || presented) {
          const why = presented ? `client certificate refused (${String(socket.authorizationError)})` : 'no client certificate (STORE_TLS_CLIENT_AUTH=require)';
          failed('certificate', why, socket);
          socket.destroy();
          return;
        }
      }
      // A client's FIN must not end our side before the replies to what it sent are
      // written (ServedConnection ends it); Node's TLS server does not pass this on.
      socket.allowHalfOpen = true;
      onSecure(socket);
    },
  );
  server.on('connection', onRaw);
  server.on('tlsClientError', (err: Error, socket: TLSSocket) => {
    // OpenSSL's errors carry a short reason; their message is its whole error stack.
    failed(handshakeReason(err), (err as { reason?: string }).reason ?? err.message, socket);
    socket.destroy();
  });
  return server;
}
