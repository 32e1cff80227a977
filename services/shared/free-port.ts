import { createServer } from 'node:net';
import { listen } from './listen.ts';

/**
 * A loopback port that was free a moment ago: bound, then released. For a process
 * that must come back on the same port, or a test that needs a port nothing listens on.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server, 0, '127.0.0.1');
  await new Promise((r) => server.close(r));
  return port;
}
