import type { Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

export interface HttpConnections {
  /** Connections open right now. */
  readonly size: number;
  /**
   * Stops accepting, lets every request in progress finish, closes each connection
   * once it has been idle (no request in progress, not a byte of a new one read) for a
   * whole check interval, and cuts whatever is left after `graceMs`. Resolves when no
   * connection is left.
   */
  drain(graceMs: number): Promise<void>;
  /** Stops accepting and destroys every connection at once. */
  destroy(): void;
}

interface ConnectionActivity {
  /** Requests read and not yet answered (pipelined ones count too). */
  busy: number;
  /** bytesRead when the last response ended: more means a new request has begun to arrive. */
  readAtRest: number;
  /** bytesRead at the previous idle check. */
  readAtCheck: number;
}

/**
 * Tracks an HTTP server's connections from the start, so shutdown can tell an idle
 * keep-alive connection from one whose next request is arriving.
 *
 * Node's own server.close() destroys every connection it thinks idle at once,
 * including one whose next request is already on the wire or unread in the kernel:
 * that client gets a reset and cannot know whether its request ran. Here a connection
 * is closed only after it has stayed idle for a whole check interval, so a request that
 * was on its way has been read by then, and is answered (503 with Connection: close).
 */
export function trackHttpConnections(server: Server, { idleCheckMs = 250 }: { idleCheckMs?: number } = {}): HttpConnections {
  const connections = new Map<Socket, ConnectionActivity>();
  let onEmpty: (() => void) | undefined;

  // Over HTTPS a request's socket is the TLS socket, which exists once the handshake is done.
  // A TLS server (an https.Server is one) has setSecureContext; asked so, node:tls stays unloaded without TLS.
  server.on('setSecureContext' in server ? 'secureConnection' : 'connection', (socket: Socket) => {
    connections.set(socket, { busy: 0, readAtRest: 0, readAtCheck: -1 });
    socket.once('close', () => {
      connections.delete(socket);
      if (connections.size === 0) onEmpty?.();
    });
  });
  const onRequest = (req: { socket: Socket }, res: { once(event: 'close', fn: () => void): unknown }): void => {
    const socket = req.socket;
    const state = connections.get(socket);
    if (!state) return;
    state.busy++;
    res.once('close', () => {
      state.busy--;
      state.readAtRest = socket.bytesRead;
    });
  };
  server.on('request', onRequest);
  // Requests with `Expect: 100-continue` come through this event instead of 'request'.
  server.on('checkContinue', onRequest);

  // net.Server's close: the listener stops, and no connection is touched (http.Server's
  // close would also destroy the ones it thinks idle).
  const stopAccepting = (): void => {
    if (server.listening) NetServer.prototype.close.call(server);
  };

  return {
    get size() {
      return connections.size;
    },
    drain(graceMs) {
      stopAccepting();
      return new Promise<void>((resolve) => {
        const check = setInterval(() => {
          for (const [socket, state] of connections) {
            const read = socket.bytesRead;
            if (state.busy === 0 && read === state.readAtRest && read === state.readAtCheck) socket.destroy();
            state.readAtCheck = read;
          }
        }, idleCheckMs);
        const cut = setTimeout(() => {
          for (const socket of connections.keys()) socket.destroy();
        }, graceMs);
        const done = (): void => {
          onEmpty = undefined;
          clearInterval(check);
          clearTimeout(cut);
          server.close(); // clears http.Server's time-out checks; the listener is already closed
          resolve();
        };
        if (connections.size === 0) done();
        else onEmpty = done;
      });
    },
    destroy() {
      stopAccepting();
      for (const socket of connections.keys()) socket.destroy();
      server.close();
    },
  };
}
