import type { Socket } from 'node:net';
import type { Secret } from '../shared/secret.ts';
import type { ClientTls } from './client-tls.ts';
import { StoreConnection } from './store-connection.ts';

export interface ProbeTarget {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  /** Told of the probe's socket as soon as it exists. */
  readonly onSocket?: (socket: Socket) => void;
  /** The store's password, sent with AUTH first. */
  readonly password?: Secret | undefined;
  /** TLS, when the store speaks it. */
  readonly tls?: ClientTls | undefined;
}

/**
 * Opens a fresh connection, sends USAGE, resolves with the number of bytes held.
 * A new connection each time on purpose: it proves the listener accepts, which a
 * pooled connection opened long ago would not.
 */
export async function probeUsage({ host, port, timeoutMs, onSocket, password, tls }: ProbeTarget): Promise<number> {
  const conn = new StoreConnection({ host, port, timeoutMs, reconnect: false, maxPending: 1, onSocket, password, tls });
  try {
    return await conn.usage();
  } finally {
    conn.destroy();
  }
}
