import { connect, type LookupFunction, type Socket } from 'node:net';
import { tlsModule } from '../shared/builtins.ts';
import type { ClientTls } from './client-tls.ts';
import { StoreUnavailableError } from './errors.ts';

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'disconnected' | 'closed';

/** The delay before reconnect attempt `attempt` (0 right after a success or a reset), in ms. */
export type ReconnectStrategy = (attempt: number) => number;

/** At once, then 50 ms doubling to 1 s. */
export const defaultReconnectStrategy: ReconnectStrategy = (attempt) => (attempt === 0 ? 0 : Math.min(1000, 50 * 2 ** (attempt - 1)));

export interface StoreSocketOptions {
  readonly host: string;
  readonly port: number;
  /** How the host's name becomes an address on each connect (default: the system's lookup). */
  readonly lookup?: LookupFunction;
  readonly connectTimeoutMs: number;
  /** Reconnect by itself after a failure (else the state goes back to idle). */
  readonly reconnect: boolean;
  readonly reconnectStrategy?: ReconnectStrategy;
  /** TCP keep-alive probes after this much idle time, so a dead peer on an idle connection is noticed. */
  readonly keepAliveMs?: number;
  /** Told of every socket opened (the store's self-probe recognises its own connection by it). */
  readonly onSocket?: (socket: Socket) => void;
  /** Told of every change of `state`. */
  readonly onStateChange?: (state: ConnectionState) => void;
  /** Speak TLS (KV_STORE_TLS): the handshake is part of the connect, with options asked for at each one. */
  readonly tls?: ClientTls | undefined;
}

/**
 * A TLS error on a connection to the store, said so that a client pointed at a plaintext
 * port (or a store with TLS and a client without) knows what to change.
 */
function tlsErrorMessage(target: string, err: Error & { code?: string; reason?: string }): string {
  const code = err.code ?? '';
  // OpenSSL's errors carry a short reason; their message is its whole error stack.
  const why = err.reason ?? err.message;
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|RECORD_LENGTH|UNKNOWN_PROTOCOL/.test(code)) {
    return `store ${target}: TLS handshake failed (${why}): the port does not speak TLS (is STORE_TLS_CERT_FILE set on the store?)`;
  }
  return `store ${target}: TLS handshake failed: ${why}`;
}

/** What the socket tells its owner (the pipeline of StoreConnection). */
export interface StoreSocketHandlers {
  /** The TCP connection is open: call ready() now, or once the store has proven it answers. */
  opened(): void;
  data(chunk: Buffer): void;
  drain(): void;
  /** The socket is gone (failed, closed by the peer, or refused) with this error; a reconnect may follow. */
  gone(err: Error): void;
}

/**
 * One TCP connection to the store, kept up: connect (with a time-out), keep-alive, and a
 * reconnect strategy after failures. It knows nothing of commands; it reports its state
 * (idle → connecting → connected, disconnected while waiting to reconnect, closed) and
 * hands bytes to its owner. A deliberate destroy() is not reported as gone.
 */
export class StoreSocket {
  readonly host: string;
  readonly port: number;
  readonly #options: StoreSocketOptions;
  readonly #handlers: StoreSocketHandlers;
  readonly #strategy: ReconnectStrategy;
  #state: ConnectionState = 'idle';
  #socket: Socket | undefined;
  #opening: { promise: Promise<void>; resolve: () => void } | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #attempt = 0;
  #lastError: Error | undefined;

  constructor(options: StoreSocketOptions, handlers: StoreSocketHandlers) {
    this.host = options.host;
    this.port = options.port;
    this.#options = options;
    this.#handlers = handlers;
    this.#strategy = options.reconnectStrategy ?? defaultReconnectStrategy;
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** The open socket, if any (writes go to it; its identity tells a batch whose socket it was). */
  get socket(): Socket | undefined {
    return this.#socket;
  }

  get lastError(): Error | undefined {
    return this.#lastError;
  }

  /** The connection in progress, if any: resolves when ready(), rejects when it fails first. */
  get opening(): Promise<void> | undefined {
    return this.#opening?.promise;
  }

  /** Opens a socket now (whatever the backoff says); resolves once the owner calls ready(). */
  open(): Promise<void> {
    if (this.#opening) return this.#opening.promise;
    clearTimeout(this.#reconnectTimer);
    this.#setState('connecting');
    const { host, port, lookup, connectTimeoutMs, keepAliveMs, onSocket, tls } = this.#options;
    const target = `${host}:${port}`;
    const socket =
      tls === undefined
        ? connect({ host, port, noDelay: true, ...(lookup ? { lookup } : {}) })
        : tlsModule().connect({ host, port, ...(lookup ? { lookup } : {}), ...tls.connectOptions() }).setNoDelay(true);
    this.#socket = socket;
    onSocket?.(socket);
    let resolve!: () => void;
    let reject!: (err: Error) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {}); // a caller that does not wait still gets the failure through gone()
    this.#opening = { promise, resolve };

    // With TLS the connect ends with the handshake; a TCP connection that gets no handshake
    // is most likely a plaintext port waiting for a line.
    let tcpConnected = false;
    if (tls !== undefined) socket.once('connect', () => (tcpConnected = true));
    const connectTimer = setTimeout(() => {
      const message = tcpConnected
        ? `TLS handshake with store ${target} got no answer within ${connectTimeoutMs} ms: does the port speak TLS (is STORE_TLS_CERT_FILE set on the store)?`
        : `connect to ${target} timed out after ${connectTimeoutMs} ms`;
      socket.destroy(new StoreUnavailableError(message));
    }, connectTimeoutMs);
    let secured = false;
    socket.once(tls === undefined ? 'connect' : 'secureConnect', () => {
      secured = true;
      clearTimeout(connectTimer);
      if (this.#socket !== socket) return;
      socket.setKeepAlive(true, keepAliveMs ?? 30_000);
      this.#handlers.opened();
    });
    let answered = false;
    // With TLS 1.3 a client learns that the store refused its certificate only when the
    // store closes the connection after the handshake, before any reply.
    const refusedHint = (): string =>
      tls !== undefined && secured && !answered ? ` right after the TLS handshake, before any reply: it may have refused this client's certificate (STORE_TLS_CLIENT_AUTH)` : '';
    socket.on('data', (chunk: Buffer) => {
      answered = true;
      this.#handlers.data(chunk);
    });
    socket.on('drain', () => this.#handlers.drain());
    socket.on('error', (err) => {
      // An error between the TCP connect and the end of the handshake is the handshake's.
      const inHandshake = tls !== undefined && tcpConnected && !secured;
      this.#lastError = err instanceof StoreUnavailableError ? err : new StoreUnavailableError(inHandshake ? tlsErrorMessage(target, err) : `store ${target}: ${err.message}${refusedHint()}`);
    });
    socket.on('close', () => {
      clearTimeout(connectTimer);
      const err = this.#lastError ?? new StoreUnavailableError(`store ${host}:${port} closed the connection${refusedHint()}`);
      if (this.#opening?.promise === promise) this.#opening = undefined;
      reject(err);
      this.#gone(socket, err);
    });
    return promise;
  }

  /** The socket carries commands from now on. */
  ready(): void {
    if (!this.#socket || !this.#opening) return;
    this.#lastError = undefined;
    const { resolve } = this.#opening;
    this.#opening = undefined;
    this.#setState('connected');
    resolve();
  }

  /** The store answered: the next failure reconnects at once again. */
  resetBackoff(): void {
    this.#attempt = 0;
  }

  write(data: string | Buffer): void {
    this.#socket?.write(data);
  }

  get writableNeedDrain(): boolean {
    return this.#socket?.writableNeedDrain ?? false;
  }

  /** Gives up on the current socket: it is destroyed and reported gone with `err` (then a reconnect, if enabled). */
  fail(err: Error): void {
    const socket = this.#socket;
    if (!socket) return;
    this.#lastError = err;
    socket.destroy();
    this.#gone(socket, err);
  }

  /** No more reconnects; the socket stays open until destroy() (so pending replies can arrive). */
  markClosed(): void {
    clearTimeout(this.#reconnectTimer);
    this.#setState('closed');
  }

  /** Closes at once and for good; not reported as gone. Idempotent. */
  destroy(): void {
    this.markClosed();
    const socket = this.#socket;
    this.#socket = undefined;
    this.#opening = undefined;
    socket?.destroy();
  }

  /** Runs once per socket, whether it closed by itself or was given up on. */
  #gone(socket: Socket, err: Error): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    this.#opening = undefined;
    this.#lastError = err;
    if (this.#state !== 'closed') {
      if (!this.#options.reconnect) {
        this.#setState('idle');
      } else {
        this.#setState('disconnected');
        this.#reconnectTimer = setTimeout(() => {
          if (this.#state === 'disconnected') this.open().catch(() => {});
        }, this.#strategy(this.#attempt++));
        this.#reconnectTimer.unref();
      }
    }
    this.#handlers.gone(err);
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#options.onStateChange?.(state);
  }
}
