import { Socket } from 'node:net';
import { detachSocketHandle } from '../../shared/node-internals.ts';

/**
 * Reads every client socket into one shared buffer instead of a fresh one per read.
 *
 * Node's usual read path allocates a buffer for each read, which V8 counts as external
 * memory: under load that is tens of MB a second, and every 64 MB of it starts a full
 * collection, a pause of several ms for every client. It also goes through the readable
 * stream's machinery ('data' events) for each read. `net.Socket`'s `onread` option avoids
 * both: the kernel's bytes land in a buffer we own and a callback gets them. Node offers it
 * only for sockets it creates, not for the ones a server accepts, so an accepted socket's
 * handle is moved into a socket made with the option (the server listens with
 * pauseOnConnect, so the first socket never reads).
 *
 * The bytes are valid only during the callback: the next read on any socket overwrites
 * them, so whoever keeps input past it must copy it.
 */

/** 64 KiB: what Node reads at once by default. */
const READ_BUFFER_BYTES = 64 * 1024;

/** What a socket's reads are handed to: bytes buf[start, end), valid only during the call (ClientSink.receive's shape). */
export type ReadReceiver = (buf: Buffer, start: number, end: number) => void;

export class SharedReadBuffer {
  readonly #buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);

  /**
   * A socket on `accepted`'s connection whose reads go to `receive` (called only after
   * this returns, on a later turn); `accepted` is left
   * without a connection and is destroyed when the new socket closes (which releases the
   * server's count of it). Returns undefined when Node's internals are not as expected; the
   * caller then keeps `accepted` and its usual reads.
   */
  adopt(accepted: Socket, receive: ReadReceiver, options: { readonly allowHalfOpen: boolean }): Socket | undefined {
    const handle = detachSocketHandle(accepted);
    if (handle === undefined) return undefined;
    const buffer = this.#buffer;
    const socket = new Socket({
      handle: handle as never,
      allowHalfOpen: options.allowHalfOpen,
      readable: true,
      writable: true,
      // true: the connection pauses reading itself when it must (see ServedConnection).
      onread: { buffer, callback: (n: number): boolean => (receive(buffer, 0, n), true) },
    });
    socket.once('close', () => accepted.destroy());
    return socket;
  }
}
