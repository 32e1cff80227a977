// What a failed TLS handshake on a listener is called, as the `reason` label of the
// services' handshake-failure counters: a small fixed set, so a client cannot mint series.

export const HANDSHAKE_REASONS = ['plaintext', 'certificate', 'timeout', 'other'] as const;
export type HandshakeReason = (typeof HANDSHAKE_REASONS)[number];

/**
 * A client that connects and never finishes its handshake is cut after this long (Node's
 * default is 120 s): a handshake takes a few round trips, and one held open costs a socket.
 */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/** The reason label of a failed handshake, from the error's code. */
export function handshakeReason(err: Error & { code?: string }): HandshakeReason {
  const code = err.code ?? '';
  if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') return 'timeout';
  if (/WRONG_VERSION_NUMBER|HTTP_REQUEST|HTTPS_PROXY_REQUEST|PACKET_LENGTH_TOO_LONG|RECORD_LENGTH_MISMATCH|UNKNOWN_PROTOCOL/.test(code)) return 'plaintext';
  if (/CERTIFICATE|PEER_DID_NOT_RETURN/.test(code)) return 'certificate';
  return 'other';
}
