// Node's private internals the store uses (services/shared/node-internals.ts): this Node
// has each one, each does what its public path does, and the fallbacks stand in for them.
import { once } from 'node:events';
import { createServer, connect, Socket, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { base64Slice, detachSocketHandle, latin1Write, listenerHandle, NODE_INTERNALS, PUBLIC_PATHS, socketFd, socketHandle } from '../services/shared/node-internals.ts';

const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) & 0xff));
const text = String.fromCharCode(...Array.from({ length: 200 }, (_, i) => (i * 13) & 0xff));

describe('Node private internals', () => {
  const closers: (() => void)[] = [];
  afterEach(() => closers.splice(0).forEach((close) => close()));

  it('are all present on this Node: a Node without one runs the slower public path', () => {
    expect(NODE_INTERNALS).toEqual({ base64Slice: true, latin1Write: true, socketHandle: true, listenerHandle: true });
  });

  it('Buffer: base64Slice and latin1Write give what their public paths give, and so do the fallbacks', () => {
    for (const [start, end] of [[0, 300], [1, 2], [7, 250], [5, 5]] as const) {
      const expected = bytes.toString('base64', start, end);
      expect(base64Slice(bytes, start, end)).toBe(expected);
      expect(PUBLIC_PATHS.base64Slice(bytes, start, end)).toBe(expected);
    }
    const [a, b, c] = [Buffer.alloc(220), Buffer.alloc(220), Buffer.alloc(220)];
    expect(latin1Write(a, text, 10)).toBe(200);
    expect(PUBLIC_PATHS.latin1Write(b, text, 10)).toBe(200);
    c.write(text, 10, 'latin1');
    expect(a).toEqual(c);
    expect(b).toEqual(c);
  });

  it("a socket's handle gives its descriptor and can be moved into a new socket; without it the fallback says there is none", async () => {
    const server = createServer({ pauseOnConnect: true }); // as the store's: the accepted socket never reads
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const accepted = once(server, 'connection');
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    closers.push(() => client.destroy());
    const [socket] = (await accepted) as [Socket];
    closers.push(() => socket.destroy());
    expect(socketHandle(new Socket())).toBeNull();
    expect(socketFd(socket)).toBeGreaterThanOrEqual(0);
    expect(PUBLIC_PATHS.socketHandle(socket)).toBeNull(); // the fallback: no handle, so Node's reads and writes

    const handle = detachSocketHandle(socket);
    expect(handle).toBeTypeOf('object');
    expect(socketHandle(socket)).toBeNull();
    expect(detachSocketHandle(socket)).toBeUndefined();
    const moved = new Socket({ handle: handle as never, readable: true, writable: true });
    closers.push(() => moved.destroy());
    client.write('ping');
    const [data] = (await once(moved, 'data')) as [Buffer];
    expect(data.toString()).toBe('ping');
  });

  it("a listener's handle hands over each accepted connection as a TCP handle, before Node makes a net.Socket of it", async () => {
    const server = createServer();
    expect(listenerHandle(server)).toBeNull(); // not listening yet
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    let wrapped = 0;
    server.on('connection', () => wrapped++);
    const handle = listenerHandle(server) as { onconnection: unknown };
    expect(handle.onconnection).toBeTypeOf('function');
    expect(PUBLIC_PATHS.listenerHandle(server)).toBeNull(); // the fallback: connections stay net.Sockets
    const taken = new Promise<{ fd: number; getpeername(out: object): number; close(done: () => void): void }>((resolve) => {
      handle.onconnection = (err: number, client: never) => {
        expect(err).toBe(0);
        resolve(client);
      };
    });
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    closers.push(() => client.destroy());
    await once(client, 'connect');
    const tcp = await taken;
    expect(tcp.fd).toBeGreaterThanOrEqual(0);
    const peer: { port?: number } = {};
    expect(tcp.getpeername(peer)).toBe(0);
    expect(peer.port).toBe(client.localPort);
    const clientSeesEnd = once(client, 'end');
    await new Promise<void>((resolve) => tcp.close(resolve));
    await clientSeesEnd;
    expect(wrapped).toBe(0);
  });
});
