import type { Socket } from 'node:net';
import { fs } from '../../shared/builtins.ts';
import { DROPPING_SINK, LINGER_MS, type ClientSink, type ClientSocket } from './client-socket.ts';
import { nativeWrite, SocketFdCache, type SocketIo } from './native-io.ts';

/**
 * Destroys an ended socket whose peer has not closed its side within LINGER_MS. The timer
 * goes when the socket closes first, as it nearly always does: left to run, it held the
 * closed connection (its socket, framer and reply buffer, ~2.5 KB) for the whole
 * LINGER_MS, long enough for the young generation to promote it, so a churn of short
 * connections filled the old generation with what a scavenge would have freed
 * (docs/benchmarks.md#connection-churn).
 */
export function lingerThenDestroy(socket: Socket): void {
  if (socket.destroyed) return;
  const linger = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(linger));
}

/**
 * Writes buf[0, n) to the socket's file descriptor at once, with one write(2); returns the
 * bytes the kernel took (n, fewer when its buffer filled up, 0 when it was full), or -1
 * when the socket has no descriptor to write to (closed; or a platform whose handles have
 * none) or the write failed otherwise.
 *
 * Why: socket.write goes through the writable stream (its state, a write request object,
 * a callback on the next tick) before the same write(2). At pipeline depth 1, where every
 * reply is a write of its own, that machinery is ~0.5 µs of the store's ~6 µs of user-space
 * CPU per command (docs/benchmarks.md#where-a-commands-cpu-goes).
 * What the kernel did not take is queued with socket.write by the caller, so the order of
 * the bytes and the stream's backpressure ('drain', writableLength) stay the stream's; an
 * error is left to socket.write too, which reports it the usual way.
 *
 * Never on an encrypted socket: a TLS handle answers `fd` with its TCP connection's, and
 * bytes written there would go out unencrypted.
 */
function writeNow(socket: Socket, fd: number, buf: Buffer, n: number, io: SocketIo | undefined): number {
  if ((socket as unknown as { readonly encrypted?: boolean }).encrypted === true) return -1; // tls.TLSSocket's (always true there)
  if (fd < 0) return -1;
  // The add-on's write(2) skips fs.writeSync's request object and trace checks (native-io.ts).
  if (io !== undefined) return nativeWrite(io, fd, buf, n);
  try {
    return fs.writeSync(fd, buf, 0, n);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EAGAIN' ? 0 : -1;
  }
}

/**
 * A client served through Node's net.Socket (a TLS connection; every connection where the
 * native add-on is not built): its stream queues what the kernel does not take at once and
 * says when it drained. Its input is read by whoever the server chose (tcp-server.ts).
 */
export class NodeClientSocket implements ClientSocket {
  readonly socket: Socket;
  readonly #io: SocketIo | undefined;
  readonly #fd = new SocketFdCache();
  #sink: ClientSink = DROPPING_SINK;

  /** `io`: the add-on whose write(2) replies go through first, if built. `closed` is called once, when the socket has closed. */
  constructor(socket: Socket, io: SocketIo | undefined, closed: (client: NodeClientSocket) => void) {
    this.socket = socket;
    this.#io = io;
    socket.once('close', () => closed(this));
  }

  get destroyed(): boolean {
    return this.socket.destroyed;
  }

  get writableLength(): number {
    return this.socket.writableLength;
  }

  get writableNeedDrain(): boolean {
    return this.socket.writableNeedDrain;
  }

  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  writeNow(buf: Buffer, n: number): number {
    const socket = this.socket;
    return writeNow(socket, this.#fd.of(socket), buf, n, this.#io);
  }

  queue(buf: Buffer, from: number, n: number): void {
    this.socket.write(buf.subarray(from, n));
  }

  end(): void {
    const socket = this.socket;
    socket.end(() => lingerThenDestroy(socket));
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Its drains and its client's FIN go to `sink`; its input reaches the sink the server's way (tcp-server.ts #readerOf). */
  get sink(): ClientSink {
    return this.#sink;
  }

  serve(sink: ClientSink): void {
    this.#sink = sink;
    const socket = this.socket;
    socket.on('drain', () => sink.drained());
    socket.on('end', () => sink.inputEnded());
  }
}
