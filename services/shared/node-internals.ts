// The one module that touches Node's private internals, each for a cost on the store's
// per-command path that the public API cannot avoid, and each checked once, at load: where
// this Node lacks one, its public path takes over (slower, same result), so a Node that
// renames them costs speed, not correctness. test/node-internals.test.ts fails on a Node
// that lacks any of them.
//
// - Buffer's base64Slice and latin1Write: what buf.toString('base64', start, end) and
//   buf.write(text, at, 'latin1') call once they have checked and normalised their
//   arguments. On paths run for every store reply that normalising is a measurable share of
//   the cost; the callers pass known-good arguments (in range, room already made).
// - A net.Socket's `_handle`, its libuv handle: the store moves an accepted connection's
//   handle into a socket that reads into a shared buffer (store/network/shared-read-buffer.ts),
//   and reads its file descriptor for the C add-on's reads and writes
//   (store/network/native-io.ts). Without it the store keeps Node's own reads and writes.
// - A net.Server's `_handle`, its listening libuv handle, whose `onconnection` the store
//   takes over to serve accepted connections without a net.Socket each
//   (store/network/native-client-socket.ts). Without it connections stay net.Sockets.
import { Server, Socket } from 'node:net';

interface BufferInternals {
  base64Slice(start: number, end: number): string;
  latin1Write(text: string, at: number): number;
}

interface SocketInternals {
  _handle: { readonly fd?: number } | null;
}

const bufferPrototype = Buffer.prototype as unknown as Partial<BufferInternals>;

/** Which of Node's private internals this process has, checked at load. */
export const NODE_INTERNALS = {
  base64Slice: typeof bufferPrototype.base64Slice === 'function',
  latin1Write: typeof bufferPrototype.latin1Write === 'function',
  // A field of every socket (null until it has a connection), or an accessor of Socket's prototype.
  socketHandle: '_handle' in new Socket(),
  // null until it listens.
  listenerHandle: '_handle' in new Server(),
} as const;

/** What each private path does, through the public API: the fallbacks. */
export const PUBLIC_PATHS = {
  base64Slice: (buf: Buffer, start: number, end: number): string => buf.toString('base64', start, end),
  latin1Write: (buf: Buffer, text: string, at: number): number => buf.write(text, at, 'latin1'),
  socketHandle: (_socket: Socket): object | null => null,
  listenerHandle: (_server: Server): object | null => null,
} as const;

/** buf.toString('base64', start, end), unchecked. */
export const base64Slice: (buf: Buffer, start: number, end: number) => string = NODE_INTERNALS.base64Slice
  ? (buf, start, end) => (buf as unknown as BufferInternals).base64Slice(start, end)
  : PUBLIC_PATHS.base64Slice;

/** buf.write(text, at, 'latin1'), unchecked; returns the bytes written. */
export const latin1Write: (buf: Buffer, text: string, at: number) => number = NODE_INTERNALS.latin1Write
  ? (buf, text, at) => (buf as unknown as BufferInternals).latin1Write(text, at)
  : PUBLIC_PATHS.latin1Write;

/** The socket's libuv handle; null when it has none (not connected yet, or closed) or this Node keeps it elsewhere. */
export const socketHandle: (socket: Socket) => object | null = NODE_INTERNALS.socketHandle
  ? (socket) => (socket as unknown as SocketInternals)._handle
  : PUBLIC_PATHS.socketHandle;

/** The listening server's libuv handle; null when it has none (not listening) or this Node keeps it elsewhere. */
export const listenerHandle: (server: Server) => object | null = NODE_INTERNALS.listenerHandle
  ? (server) => (server as unknown as { _handle: object | null })._handle
  : PUBLIC_PATHS.listenerHandle;

/** The socket's file descriptor, or -1 when it has none (closed; a platform whose handles have none; no handle to read it from). */
export function socketFd(socket: Socket): number {
  const fd = (socketHandle(socket) as SocketInternals['_handle'])?.fd;
  return fd !== undefined && fd >= 0 ? fd : -1;
}

/**
 * Takes the handle off `socket`, which is left without a connection, so that a new Socket
 * can be made on it (`new Socket({ handle })`); undefined when there is none to take.
 */
export function detachSocketHandle(socket: Socket): object | undefined {
  const handle = socketHandle(socket);
  if (handle === null || typeof handle !== 'object') return undefined;
  (socket as unknown as SocketInternals)._handle = null;
  return handle;
}
