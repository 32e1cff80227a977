import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { getSystemErrorName } from 'node:util';
import type { NativeIoMode } from '../../config/config.ts';
import type { Logger } from '../../shared/logger.ts';
import { socketFd, socketHandle } from '../../shared/node-internals.ts';
import type { ReadSwitch } from './read-switch.ts';
import type { ReadReceiver } from './shared-read-buffer.ts';

/**
 * The store's client-socket I/O in C (services/store/network/native/socket-io.c), when it was
 * built (`npm ci` runs native/build-native.ts) and STORE_NATIVE_IO allows it: the reads
 * of every ready client in one event-loop wake-up and one callback scope, and write(2)
 * without Node's file-system binding. What it does and why: the C file's header.
 */
export interface SocketIo {
  createPoller(buffer: Buffer, onRead: (id: number, n: number) => void): PollerHandle;
  /** 0, or -errno. */
  watch(poller: PollerHandle, fd: number, id: number): number;
  unwatch(poller: PollerHandle, fd: number, id: number): void;
  forget(poller: PollerHandle, fd: number, id: number): void;
  closePoller(poller: PollerHandle): void;
  /** The bytes the kernel took, or -errno. */
  write(fd: number, buffer: Buffer, length: number): number;
  /** glibc's mallopt: 1 when it took the setting, 0 when it refused, -1 without glibc (runtime/malloc-tuning.ts); absent from an add-on built before it. */
  mallopt?(param: number, value: number): number;
  /** A zeroed buffer of its own mapping, unmapped when detached (engine/page-source.ts); absent from an add-on built before it. */
  mapPage?(bytes: number): ArrayBuffer;
  /** glibc's malloc_trim(0) on a thread of libuv's pool; done(1 when memory went back, 0 when none, -1 without glibc) (runtime/idle-malloc-trim.ts); absent from an add-on built before it. */
  mallocTrim?(done: (result: number) => void): void;
}

declare const pollerBrand: unique symbol;
export type PollerHandle = { readonly [pollerBrand]: true };

const ADDON = fileURLToPath(new URL('./native/build/socket-io.node', import.meta.url));

/** The built add-on, or why there is none. */
export function loadSocketIo(): { readonly io: SocketIo } | { readonly reason: string } {
  if (process.platform !== 'linux') return { reason: `not on Linux (${process.platform})` };
  try {
    return { io: createRequire(import.meta.url)(ADDON) as SocketIo };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { reason: code === 'MODULE_NOT_FOUND' ? `not built (${ADDON}: npm ci builds it with a C compiler)` : `cannot load ${ADDON}: ${(err as Error).message}` };
  }
}

/**
 * The socket I/O STORE_NATIVE_IO asks for: the add-on when it loads (auto, on), else
 * Node's (auto: said in one log line; on: the store does not start, with the reason).
 */
export function chooseSocketIo(mode: NativeIoMode, logger: Logger, load: typeof loadSocketIo = loadSocketIo): SocketIo | undefined {
  if (mode === 'off') return undefined;
  const loaded = load();
  if ('io' in loaded) return loaded.io;
  if (mode === 'on') throw new Error(`STORE_NATIVE_IO=on, but the native socket I/O is unavailable: ${loaded.reason}`);
  logger.info({ why: loaded.reason }, 'native socket I/O unavailable: client sockets go through Node');
  return undefined;
}

const EAGAIN = constants.errno.EAGAIN;

/**
 * writeNow's result from the add-on's: the bytes taken, 0 when the socket's buffer was
 * full, -1 on any other error (left to socket.write, which reports it the usual way).
 */
export function nativeWrite(io: SocketIo, fd: number, buf: Buffer, n: number): number {
  const r = io.write(fd, buf, n);
  return r >= 0 ? r : r === -EAGAIN ? 0 : -1;
}

/**
 * socketFd, read once per handle: a handle's `fd` is an accessor that calls into C++
 * (~0.7% of the store's CPU at pipeline depth 16 when read for every write). A handle
 * keeps its descriptor while it is open; closing a socket drops its handle (`_handle`
 * becomes null in the same call), so a closed socket's old number is never used.
 */
export class SocketFdCache {
  #handle: object | null = null;
  #fd = -1;

  of(socket: Socket): number {
    const handle = socketHandle(socket);
    if (handle !== this.#handle) {
      this.#handle = handle;
      this.#fd = socketFd(socket);
    }
    return this.#fd;
  }
}

/** What the sockets of one poller share: the add-on, the poller, whether it is closed, and its sockets by id. */
interface PollerState {
  readonly io: SocketIo;
  readonly poller: PollerHandle;
  closed: boolean;
  /** By id; ids are reused once their socket has closed. */
  readonly watched: (WatchedSocket | undefined)[];
  readonly freeIds: number[];
}

/**
 * A socket the poller reads, under its id, and its ReadSwitch: pausing stops watching its
 * descriptor, resuming watches it again.
 */
class WatchedSocket implements ReadSwitch {
  readonly socket: Socket;
  readonly receive: ReadReceiver;
  readonly #poller: PollerState;
  readonly #fd: number;
  readonly #id: number;
  /**
   * Watched. After the end of the input it stays on: there is nothing more to read, and
   * watching again would report that end a second time.
   */
  #on = true;

  constructor(poller: PollerState, socket: Socket, fd: number, id: number, receive: ReadReceiver) {
    this.#poller = poller;
    this.socket = socket;
    this.#fd = fd;
    this.#id = id;
    this.receive = receive;
  }

  get paused(): boolean {
    return !this.#on;
  }

  pause(): void {
    const p = this.#poller;
    if (!this.#on || p.closed || this.socket.destroyed) return;
    this.#on = false;
    p.io.unwatch(p.poller, this.#fd, this.#id);
  }

  resume(): void {
    const p = this.#poller;
    if (this.#on || p.closed || this.socket.destroyed) return;
    this.#on = p.io.watch(p.poller, this.#fd, this.#id) === 0;
  }

  /**
   * The client's input ended (or failed): no more reads. The switch stays on, so that
   * nothing watches the descriptor again (an ended socket stays readable to epoll).
   */
  endOfInput(): void {
    const p = this.#poller;
    p.io.unwatch(p.poller, this.#fd, this.#id);
  }

  /** The socket closed (its server calls this): its descriptor leaves the poller for good, and its id is free again. */
  release(): void {
    const p = this.#poller;
    if (p.watched[this.#id] !== this) return;
    if (!p.closed) p.io.forget(p.poller, this.#fd, this.#id);
    this.#on = false;
    p.watched[this.#id] = undefined;
    p.freeIds.push(this.#id);
  }
}

/** 64 KiB: what Node reads at once, and what one read here takes. */
const READ_BUFFER_BYTES = 64 * 1024;

/**
 * The client sockets of one server read through one poller. A socket handed over stays
 * paused in Node's eyes for its whole life (the server listens with pauseOnConnect), so
 * libuv never reads it; the poller does, while its ReadSwitch is on. At the end of the
 * client's input the socket is told as Node's own read path would tell it ('end', after
 * which a half-open socket is destroyed once our side has ended too); a read error
 * destroys it with that error. Owned by the server, closed with it.
 */
export class NativeClientReads {
  readonly #poller: PollerState;
  readonly #buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);

  constructor(io: SocketIo) {
    this.#poller = { io, poller: io.createPoller(this.#buffer, (id, n) => this.#onRead(id, n)), closed: false, watched: [], freeIds: [] };
  }

  /**
   * Reads `socket` into `receive` (bytes valid only during the call: the poller's buffer is
   * reused) from now on, reading on; undefined when the socket has no descriptor (already
   * closed) or the kernel refused to watch it, when the caller keeps Node's reads. The
   * caller calls the switch's release() when the socket closes.
   */
  adopt(socket: Socket, receive: ReadReceiver): ReadSwitch | undefined {
    const fd = socketFd(socket);
    const p = this.#poller;
    if (p.closed || fd < 0) return undefined;
    const id = p.freeIds.pop() ?? p.watched.length;
    if (p.io.watch(p.poller, fd, id) !== 0) {
      p.freeIds.push(id);
      return undefined;
    }
    const watched = new WatchedSocket(p, socket, fd, id, receive);
    p.watched[id] = watched;
    return watched;
  }

  /** Stops reading every socket (the server is done with them) and frees the poller. */
  close(): void {
    const p = this.#poller;
    if (p.closed) return;
    p.closed = true;
    p.io.closePoller(p.poller);
  }

  #onRead(id: number, n: number): void {
    const watched = this.#poller.watched[id];
    if (watched === undefined || watched.socket.destroyed) return;
    if (n > 0) {
      watched.receive(this.#buffer, n);
      return;
    }
    // No more input: stop watching, then tell the socket as Node would.
    watched.endOfInput();
    const socket = watched.socket;
    if (n === 0) {
      socket.push(null);
      socket.read(0);
    } else {
      // The error Node's own read path gives (`read ECONNRESET`, with code, errno and syscall).
      const code = getSystemErrorName(n);
      socket.destroy(Object.assign(new Error(`read ${code}`), { code, errno: n, syscall: 'read' }));
    }
  }
}
