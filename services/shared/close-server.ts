import type { Server } from 'node:http';

/** Stops accepting and resolves once open requests have finished (idle keep-alive sockets close at once). */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
}
