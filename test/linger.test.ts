// An ended connection's linger timer (node-client-socket.ts lingerThenDestroy): it cuts off a
// peer that keeps its side open, and it goes as soon as the socket closes, so that a closed
// connection is not held for LINGER_MS (a churn of short connections promoted every one of
// them into V8's old generation: docs/benchmarks.md#connection-churn).
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LINGER_MS } from '../services/store/network/client-socket.ts';
import { lingerThenDestroy } from '../services/store/network/node-client-socket.ts';

describe('lingerThenDestroy', () => {
  let server: Server | undefined;
  afterEach(() => {
    vi.useRealTimers();
    server?.close();
  });

  /** A server that ends each connection at once and lingers; resolves with the accepted socket and the client. */
  async function endedConnection(): Promise<{ accepted: Socket; client: Socket }> {
    let accepted!: Socket;
    server = createServer({ allowHalfOpen: true }, (socket) => {
      accepted = socket;
      socket.end(() => lingerThenDestroy(socket));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const client = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    await once(client, 'end'); // the server's FIN: its end() has finished
    return { accepted, client };
  }

  it('drops its timer when the peer closes first', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { accepted, client } = await endedConnection();
    expect(vi.getTimerCount()).toBe(1);
    client.end();
    await once(accepted, 'close');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('destroys a socket whose peer keeps its side open for LINGER_MS', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { accepted, client } = await endedConnection();
    expect(accepted.destroyed).toBe(false);
    vi.advanceTimersByTime(LINGER_MS - 1);
    expect(accepted.destroyed).toBe(false);
    vi.advanceTimersByTime(1);
    expect(accepted.destroyed).toBe(true);
    client.destroy();
  });

  it('sets no timer for a socket already destroyed', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const socket = connect({ port: 1, host: '127.0.0.1' }).on('error', () => {});
    socket.destroy();
    lingerThenDestroy(socket);
    expect(vi.getTimerCount()).toBe(0);
  });
});
