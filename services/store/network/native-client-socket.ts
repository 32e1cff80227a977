import { getSystemErrorName } from 'node:util';
import { constants } from 'node:os';
import { LINGER_MS, DROPPING_SINK, type ClientSink, type ClientSocket } from './client-socket.ts';
import { checkPeriodMs } from './check-period.ts';
import { EVENT_FIELDS, WRITABLE_EVENT, writeBuffer, type PollerHandle, type SocketIo } from './native-io.ts';
import type { ReadSwitch } from './read-switch.ts';
import type { ConnectionReads } from './served-connection.ts';

/**
 * The TCP handle Node's listener makes for each accepted connection (libuv's): the store
 * takes it from the listener (tcp-server.ts) instead of the net.Socket Node would wrap it
 * in. A net.Socket with its stream states and event emitter is ~4 KB of JavaScript per
 * connection, most of what a short connection would leave to the collector.
 */
export interface TcpHandle {
  readonly fd: number;
  setNoDelay(on: boolean): number;
  getpeername(out: { address?: string; port?: number }): number;
  close(): void;
}

/** How the server hears of its native sockets: each close, and each error (as Node's socket would report it). */
export interface NativeClientsOptions {
  /** Called from destroy(), once its descriptor is closed: it must not call into the socket's connection. */
  readonly closed: (client: NativeClientSocket) => void;
  readonly failed: (client: NativeClientSocket, err: NodeJS.ErrnoException) => void;
  /** How long an ended socket waits for its peer's FIN (LINGER_MS; a test may set less). */
  readonly lingerMs?: number;
}

const EAGAIN = constants.errno.EAGAIN;

/**
 * What one read here takes (64 KiB, Node's read size), twice over: a turn's reads land one
 * after another in the buffer (a read of one command is tens of bytes), and the poller
 * hands them over early only when another read might not fit.
 */
const READ_BUFFER_BYTES = 2 * 64 * 1024;

/**
 * The client sockets of one server, as descriptors the add-on's poller reads (and, while
 * replies wait, watches for room to write): no net.Socket, no stream. Owned by the server,
 * closed with it. The sockets ended and waiting for their peer's FIN are checked by one
 * timer, not a timer each.
 */
export class NativeClients {
  readonly io: SocketIo;
  readonly poller: PollerHandle;
  readonly buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  /** The poller's events of a turn (EVENT_FIELDS int32s each). */
  readonly events: Int32Array;
  readonly options: NativeClientsOptions;
  /** By id; ids are reused once their socket has closed. */
  readonly watched: (NativeClientSocket | undefined)[] = [];
  readonly #freeIds: number[] = [];
  /** Ended sockets waiting for their peer's FIN, with the time they are cut off at. */
  readonly #lingering = new Map<NativeClientSocket, number>();
  #lingerTimer: NodeJS.Timeout | undefined;
  closed = false;

  constructor(io: SocketIo, options: NativeClientsOptions) {
    this.io = io;
    this.options = options;
    this.events = new Int32Array(io.eventsPerBatch * EVENT_FIELDS);
    this.poller = io.createPoller(this.buffer, this.events, (count) => this.#dispatch(count));
  }

  /** The poller's batch: each event to its socket, in order; a socket closed since is skipped (its id is free). */
  #dispatch(count: number): void {
    const events = this.events;
    const watched = this.watched;
    for (let e = 0, end = count * EVENT_FIELDS; e < end; e += EVENT_FIELDS) {
      const socket = watched[events[e]!];
      if (socket === undefined) continue;
      const start = events[e + 1]!;
      if (start === WRITABLE_EVENT) socket.onWritable();
      else socket.onRead(start, events[e + 2]!);
    }
  }

  /**
   * A socket on `handle`, not yet read (serve() starts its reads): `reuse`, a closed socket
   * of these, when given, else a new one; undefined when the handle has no descriptor.
   */
  adopt(handle: TcpHandle, reuse?: NativeClientSocket): NativeClientSocket | undefined {
    const fd = handle.fd;
    if (this.closed || !(fd >= 0)) return undefined;
    const id = this.#freeIds.pop() ?? this.watched.length;
    const socket = reuse !== undefined && reuse.destroyed ? reuse.reopen(handle, fd, id) : new NativeClientSocket(this, handle, fd, id);
    this.watched[id] = socket;
    return socket;
  }

  /** The socket under `id` closed: its id is free again. */
  release(id: number): void {
    this.watched[id] = undefined;
    this.#freeIds.push(id);
  }

  linger(socket: NativeClientSocket): void {
    const lingerMs = this.options.lingerMs ?? LINGER_MS;
    this.#lingering.set(socket, performance.now() + lingerMs);
    if (this.#lingerTimer === undefined) {
      this.#lingerTimer = setInterval(() => this.#cutLingering(), checkPeriodMs(lingerMs));
      this.#lingerTimer.unref();
    }
  }

  stopLingering(socket: NativeClientSocket): void {
    this.#lingering.delete(socket);
    if (this.#lingering.size === 0 && this.#lingerTimer !== undefined) {
      clearInterval(this.#lingerTimer);
      this.#lingerTimer = undefined;
    }
  }

  #cutLingering(): void {
    const now = performance.now();
    for (const [socket, until] of this.#lingering) if (now >= until) socket.destroy();
  }

  /** Closes every socket still open (a refused one lingering) and frees the poller. */
  close(): void {
    if (this.closed) return;
    for (const socket of this.watched) socket?.destroy();
    this.closed = true;
    clearInterval(this.#lingerTimer);
    this.#lingerTimer = undefined;
    this.io.closePoller(this.poller);
  }
}

/**
 * One client's descriptor, read by the poller while its ReadSwitch is on, written with
 * write(2); what the kernel does not take is queued here and written as the poller says
 * the socket takes output again. The same life as a net.Socket made with allowHalfOpen:
 * the client's FIN ends its input (the sink answers what it sent, then ends), a FIN is
 * sent after the last reply, and the socket closes once both sides are done (or LINGER_MS
 * after ours), or at once on an error or destroy().
 */
export class NativeClientSocket implements ClientSocket, ReadSwitch, ConnectionReads {
  readonly shared = true;
  readonly native = true;
  readonly #clients: NativeClients;
  #handle: TcpHandle;
  #fd: number;
  #id: number;
  #sink: ClientSink = DROPPING_SINK;
  /** Its descriptor is watched for input. */
  #reading = false;
  #inputEnded = false;
  /** end() was called: a FIN goes after the queue. */
  #ending = false;
  #finSent = false;
  #destroyed = false;
  /** Bytes the kernel has not taken yet, in order. */
  #queue: Buffer[] = [];
  #queued = 0;
  #peer: { address?: string; port?: number } | undefined;

  constructor(clients: NativeClients, handle: TcpHandle, fd: number, id: number) {
    this.#clients = clients;
    this.#handle = handle;
    this.#fd = fd;
    this.#id = id;
    handle.setNoDelay(true);
  }

  /** The same object on a new connection, as if made anew (NativeClients.adopt): only once destroyed. */
  reopen(handle: TcpHandle, fd: number, id: number): this {
    this.#handle = handle;
    this.#fd = fd;
    this.#id = id;
    this.#sink = DROPPING_SINK;
    this.#reading = false;
    this.#inputEnded = false;
    this.#ending = false;
    this.#finSent = false;
    this.#destroyed = false;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#peer = undefined;
    handle.setNoDelay(true);
    return this;
  }

  get sink(): ClientSink {
    return this.#sink;
  }

  get switch(): ReadSwitch {
    return this;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  get writableLength(): number {
    return this.#queued;
  }

  get writableNeedDrain(): boolean {
    return this.#queued > 0;
  }

  get remoteAddress(): string | undefined {
    return this.#peerName()?.address;
  }

  get remotePort(): number | undefined {
    return this.#peerName()?.port;
  }

  /** Asked only for a log line or the probe's exemption: a system call and an object. */
  #peerName(): { address?: string; port?: number } | undefined {
    if (this.#peer === undefined && !this.#destroyed) {
      const out = {};
      if (this.#handle.getpeername(out) === 0) this.#peer = out;
    }
    return this.#peer;
  }

  serve(sink: ClientSink): void {
    this.#sink = sink;
    this.resume();
    if (!this.#reading && !this.#destroyed) this.#fail(-constants.errno.EBADF, 'read'); // the kernel refused to watch it
  }

  // ReadSwitch
  get paused(): boolean {
    return !this.#reading;
  }

  pause(): void {
    const c = this.#clients;
    if (!this.#reading || this.#destroyed || c.closed) return;
    this.#reading = false;
    c.io.unwatch(c.poller, this.#fd, this.#id);
  }

  resume(): void {
    const c = this.#clients;
    // After the end of its input a socket stays readable to epoll: it is not watched again.
    if (this.#reading || this.#destroyed || this.#inputEnded || c.closed) return;
    this.#reading = c.io.watch(c.poller, this.#fd, this.#id) === 0;
  }

  writeNow(buf: Buffer, n: number): number {
    if (this.#destroyed) return -1;
    const r = writeBuffer(this.#clients.io, this.#fd, buf, n);
    if (r >= 0) return r;
    if (r === -EAGAIN) return 0;
    this.#fail(r, 'write');
    return -1;
  }

  queue(buf: Buffer, from: number, n: number): void {
    if (this.#destroyed || this.#finSent || from >= n) return;
    this.#queue.push(from === 0 && n === buf.length ? buf : buf.subarray(from, n));
    if (this.#queued === 0) {
      const c = this.#clients;
      if (c.io.watchWrites(c.poller, this.#fd, this.#id, true) !== 0) {
        this.#fail(-constants.errno.EBADF, 'write');
        return;
      }
    }
    this.#queued += n - from;
  }

  end(): void {
    if (this.#destroyed || this.#ending) return;
    this.#ending = true;
    if (this.#queued === 0) this.#sendFin();
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#reading = false;
    this.#queue.length = 0;
    this.#queued = 0;
    const c = this.#clients;
    c.stopLingering(this);
    if (!c.closed) c.io.forget(c.poller, this.#fd, this.#id);
    c.release(this.#id);
    // libuv closes the descriptor within this call (uv_close of a TCP handle); the handle
    // itself goes at the next turn. No callback: one would be a closure and a property
    // added to the handle, per connection.
    this.#handle.close();
    c.options.closed(this);
  }

  /**
   * The poller read n bytes into its buffer from `start` (0: end of input; -errno: the read
   * failed). Also when the socket was paused after the read, in the same batch: the bytes
   * are the client's, and the sink takes input whenever it comes.
   */
  onRead(start: number, n: number): void {
    if (this.#destroyed) return;
    if (n > 0) {
      this.#sink.receive(this.#clients.buffer, start, start + n);
      return;
    }
    if (n < 0) {
      this.#fail(n, 'read');
      return;
    }
    this.#inputEnded = true;
    this.pause();
    if (this.#finSent) this.destroy(); // both sides are done
    else this.#sink.inputEnded();
  }

  /** The socket takes output again: writes what is queued, in order (nothing, when it was all written since the poll). */
  onWritable(): void {
    if (this.#queued === 0) return;
    const q = this.#queue;
    const io = this.#clients.io;
    while (q.length > 0 && !this.#destroyed) {
      const b = q[0]!;
      const r = writeBuffer(io, this.#fd, b, b.length);
      if (r === -EAGAIN) return;
      if (r < 0) {
        this.#fail(r, 'write');
        return;
      }
      this.#queued -= r;
      if (r < b.length) {
        q[0] = b.subarray(r);
        return; // the kernel's buffer is full again
      }
      q.shift();
    }
    if (this.#destroyed) return;
    const c = this.#clients;
    c.io.watchWrites(c.poller, this.#fd, this.#id, false);
    if (this.#ending) this.#sendFin();
    if (!this.#destroyed) this.#sink.drained();
  }

  #sendFin(): void {
    if (this.#finSent) return;
    this.#finSent = true;
    const r = this.#clients.io.shutdownWrite(this.#fd);
    if (r < 0) {
      this.destroy(); // the peer is gone (ENOTCONN): nothing to wait for
      return;
    }
    if (this.#inputEnded) {
      this.destroy();
      return;
    }
    // Reading goes on, dropped by the sink, so the peer's FIN is seen and it gets no reset.
    this.resume();
    this.#clients.linger(this);
  }

  /** An error from a read or a write: reported as Node's read path reports it (`read ECONNRESET`), then closed. */
  #fail(errno: number, syscall: 'read' | 'write'): void {
    const code = getSystemErrorName(errno);
    this.#clients.options.failed(this, Object.assign(new Error(`${syscall} ${code}`), { code, errno, syscall }));
    this.destroy();
  }
}
