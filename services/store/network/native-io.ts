import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { NativeIoMode } from '../../config/config.ts';
import type { Logger } from '../../shared/logger.ts';
import { socketFd, socketHandle } from '../../shared/node-internals.ts';

/**
 * The store's client-socket I/O in C (services/store/network/native/socket-io.c), when it was
 * built (`npm ci` runs native/build-native.ts) and STORE_NATIVE_IO allows it: the reads
 * of every ready client in one event-loop wake-up and one callback scope, and write(2)
 * and shutdown(2) without Node's streams (native-client-socket.ts). What it does and why:
 * the C file's header.
 */
export interface SocketIo {
  /**
   * A poller whose reads land in `buffer` and whose events go to onEvents(count) as the
   * first `count` triples of `events` (EVENT_FIELDS each): a socket's id, where its read's
   * bytes start in `buffer` (WRITABLE_EVENT: it takes output again), and the read's result
   * (n bytes, 0 at the end of the input, -errno). `events` holds eventsPerBatch of them.
   */
  createPoller(buffer: Buffer, events: Int32Array, onEvents: (count: number) => void): PollerHandle;
  /** The most events one onEvents call hands over. */
  readonly eventsPerBatch: number;
  /** Reads on: 0, or -errno. */
  watch(poller: PollerHandle, fd: number, id: number): number;
  /** Reads off. */
  unwatch(poller: PollerHandle, fd: number, id: number): void;
  /** onWritable on or off: 0, or -errno. */
  watchWrites(poller: PollerHandle, fd: number, id: number, on: boolean): number;
  /** The descriptor was closed: the poller forgets it. */
  forget(poller: PollerHandle, fd: number, id: number): void;
  /** shutdown(fd, SHUT_WR): 0, or -errno. */
  shutdownWrite(fd: number): number;
  closePoller(poller: PollerHandle): void;
  /** The bytes the kernel took of buffer[offset, offset + length), or -errno. */
  writeRange(fd: number, buffer: ArrayBufferLike, offset: number, length: number): number;
  /** glibc's mallopt: 1 when it took the setting, 0 when it refused, -1 without glibc (runtime/malloc-tuning.ts); absent from an add-on built before it. */
  mallopt?(param: number, value: number): number;
  /** A zeroed buffer of its own mapping, unmapped when detached (engine/page-source.ts); absent from an add-on built before it. */
  mapPage?(bytes: number): ArrayBuffer;
  /** madvise(MADV_DONTNEED) of a buffer from mapPage, which stays mapped and reads as zeros: 0, or -errno (engine/page-source.ts); absent from an add-on built before it. */
  releasePage?(page: ArrayBuffer): number;
  /** releasePage for the OS pages wholly within bytes [from, to) of the page: 0, or -errno (engine/record-arena.ts); absent from an add-on built before it. */
  releaseRange?(page: ArrayBuffer, from: number, to: number): number;
  /** glibc's malloc_trim(0) on a thread of libuv's pool; done(1 when memory went back, 0 when none, -1 without glibc) (runtime/idle-malloc-trim.ts); absent from an add-on built before it. */
  mallocTrim?(done: (result: number) => void): void;
}

declare const pollerBrand: unique symbol;
export type PollerHandle = { readonly [pollerBrand]: true };

const ADDON = fileURLToPath(new URL('./native/build/socket-io.node', import.meta.url));
const BUILD_SCRIPT = 'services/store/network/native/build-native.ts';

/** The built add-on, or why there is none. */
export function loadSocketIo(): { readonly io: SocketIo } | { readonly reason: string } {
  if (process.platform !== 'linux') return { reason: `not on Linux (${process.platform})` };
  try {
    const io = createRequire(import.meta.url)(ADDON) as Partial<SocketIo>;
    // An add-on built before the store took its connections from Node's listener itself, or before it batched a turn's reads.
    if (typeof io.watchWrites !== 'function' || typeof io.shutdownWrite !== 'function' || typeof io.writeRange !== 'function' || typeof io.eventsPerBatch !== 'number') return { reason: `${ADDON} is out of date (npm ci, or node ${BUILD_SCRIPT}, builds it again)` };
    return { io: io as SocketIo };
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

/** The int32s of one event in a poller's batch: id, start, n. */
export const EVENT_FIELDS = 3;
/** An event's start when the socket takes output again (not a read). */
export const WRITABLE_EVENT = -1;

const EAGAIN = constants.errno.EAGAIN;

/**
 * writeNow's result from the add-on's: the bytes taken, 0 when the socket's buffer was
 * full, -1 on any other error (left to socket.write, which reports it the usual way).
 */
export function nativeWrite(io: SocketIo, fd: number, buf: Buffer, n: number): number {
  const r = writeBuffer(io, fd, buf, n);
  return r >= 0 ? r : r === -EAGAIN ? 0 : -1;
}

/** The add-on's write(2) of buf[0, n): the bytes the kernel took, or -errno. */
export function writeBuffer(io: SocketIo, fd: number, buf: Buffer, n: number): number {
  return io.writeRange(fd, buf.buffer, buf.byteOffset, n);
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
