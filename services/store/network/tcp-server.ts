import { createServer, type Server, type Socket } from 'node:net';
import type { SecureContextOptions, Server as TlsServer } from 'node:tls';
import { MAX_CONNECTIONS_REPLY, statsReply } from '../../protocol/replies.ts';
import { listen } from '../../shared/listen.ts';
import type { Logger } from '../../shared/logger.ts';
import { ServedConnection, lingerThenDestroy, TURN_SLICE_MS, type ConnectionContext, type ConnectionFlow, type ConnectionReads } from './served-connection.ts';
import { NativeClientReads, type SocketIo } from './native-io.ts';
import { StreamReadSwitch } from './read-switch.ts';
import { CommandRunner } from './command-runner.ts';
import { ReplyBufferPool } from './reply-buffer.ts';
import { SharedReadBuffer, type ReadReceiver } from './shared-read-buffer.ts';
import type { StoreEngine } from '../engine/engine-api.ts';
import { TURN_BUDGET, type StoreMetrics } from '../store-metrics.ts';
import { HeldInputPool } from './held-input-pool.ts';
import { TurnScheduler } from './turn-scheduler.ts';
import type { PasswordCheck } from './password-check.ts';
import { createTlsListener, type TlsListenerOptions } from './tls-listener.ts';

export type { ConnectionFlow } from './served-connection.ts';

export interface StoreServerOptions {
  readonly engine: StoreEngine;
  readonly metrics: StoreMetrics;
  readonly logger: Logger;
  readonly maxValueBytes: number;
  /** The longest line accepted (lineBound(maxValueBytes)). */
  readonly maxLineBytes: number;
  readonly maxConnections: number;
  /** 0 = never. */
  readonly idleTimeoutMs: number;
  /** A connection whose full socket the client takes nothing from for this long is closed; 0 = never. */
  readonly outputStallTimeoutMs: number;
  readonly evictionPolicy: string;
  /** A connection for which this is true is accepted past maxConnections (the store's own readiness probe). */
  readonly exemptFromLimit?: (socket: Socket) => boolean;
  /** A connection's time budget per turn, ms (default TURN_SLICE_MS; a test may set 0). */
  readonly turnSliceMs?: number;
  /** The time per turn for pipelined work, ms (default TURN_BUDGET_MS; a test may set 0). */
  readonly turnBudgetMs?: number;
  /** Client sockets read and written through the native add-on (native-io.ts); without it, through Node. */
  readonly socketIo?: SocketIo | undefined;
  /** The password a connection must send with AUTH first (SPEC §8); none by default. */
  readonly password?: PasswordCheck;
  /**
   * TLS on the port (SPEC §8): the port then speaks TLS only, through Node's TLS stack;
   * its connections are read by Node's stream (never the native poller nor the shared
   * buffer, which see only ciphertext) and served as every other.
   */
  readonly tls?: TlsListenerOptions | undefined;
}

/**
 * How often the connection sweep runs: a quarter of the shorter time-out, and at least
 * once a second, so a connection is closed at most that much after its time-out (as
 * Redis's clientsCron closes idle clients).
 */
const SWEEP_MAX_MS = 1000;

/** The sweep's period for the time-outs in effect (0 = off); undefined when both are off. */
export function sweepPeriodMs(idleTimeoutMs: number, outputStallTimeoutMs: number): number | undefined {
  const timeouts = [idleTimeoutMs, outputStallTimeoutMs].filter((t) => t > 0);
  if (timeouts.length === 0) return undefined;
  return Math.max(1, Math.min(SWEEP_MAX_MS, Math.min(...timeouts) / 4));
}

/**
 * The store's TCP listener: accepts up to maxConnections clients, hands each to a
 * ServedConnection, closes those whose client stopped taking its replies, and tracks
 * every socket so shutdown can end them.
 */
export class StoreServer {
  readonly options: StoreServerOptions;
  readonly metrics: StoreMetrics;
  readonly server: Server;
  readonly #context: ConnectionContext;
  /** The connections served, by socket. */
  readonly #connections = new Map<Socket, ServedConnection>();
  /** Every socket, refused ones included, so destroy() leaves none behind. */
  readonly #sockets = new Set<Socket>();
  /**
   * A socket's 'error' and 'close' listeners, one of each for every socket: each gets its
   * socket as `this`, so a connection adds no closures of its own for them.
   */
  readonly #onSocketError: (this: Socket, err: Error) => void;
  readonly #onSocketClose: (this: Socket) => void;
  readonly #startedAt = performance.now();
  readonly #reads = new SharedReadBuffer();
  readonly #nativeReads: NativeClientReads | undefined;
  readonly #sweep: NodeJS.Timeout | undefined;
  #closing = false;
  #warnedReads = false;
  #onAllClosed: (() => void) | undefined;

  constructor(options: StoreServerOptions) {
    this.options = options;
    this.metrics = options.metrics;
    const logger = options.logger;
    this.#onSocketError = function (this: Socket, err: Error): void {
      logger.debug({ err: err.message, remote: this.remoteAddress }, 'client socket error');
    };
    const server = this;
    this.#onSocketClose = function (this: Socket): void {
      server.#closed(this);
    };
    const runner = new CommandRunner({ engine: options.engine, metrics: options.metrics, maxValueBytes: options.maxValueBytes, statsReply: () => this.statsReply(), password: options.password });
    this.#nativeReads = options.socketIo === undefined ? undefined : new NativeClientReads(options.socketIo);
    this.#context = {
      maxLineBytes: options.maxLineBytes,
      turnSliceMs: options.turnSliceMs ?? TURN_SLICE_MS,
      runner,
      replyPool: new ReplyBufferPool(options.socketIo),
      heldCopies: new HeldInputPool(),
      turns: new TurnScheduler({ before: () => runner.prefetchHeld(), after: () => runner.releaseHeld() }, options.turnBudgetMs, (n) => {
        options.metrics.connectionYields[TURN_BUDGET] += n;
      }),
      metrics: options.metrics,
      logger: options.logger,
    };
    // allowHalfOpen: a client's FIN must not end our side before the replies to what it
    // sent are written (they may be held back); ServedConnection ends it.
    // pauseOnConnect: an accepted socket must not read before its handle moves to the
    // socket that reads into the shared buffer (see SharedReadBuffer).
    this.server =
      options.tls === undefined
        ? createServer({ noDelay: true, allowHalfOpen: true, pauseOnConnect: true }, (socket) => this.#accept(socket))
        : createTlsListener(options.tls, options.logger, (socket) => this.#accept(socket), (raw) => this.#track(raw));
    this.server.on('error', (err) => options.logger.error({ err }, 'store listener error'));
    const period = sweepPeriodMs(options.idleTimeoutMs, options.outputStallTimeoutMs);
    if (period !== undefined) {
      this.#sweep = setInterval(() => this.#sweepConnections(), period);
      this.#sweep.unref();
    }
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Flow-control state of each open connection (for tests and diagnostics). */
  connectionFlows(): ConnectionFlow[] {
    const { idleTimeoutMs } = this.options;
    return [...this.#connections.values()].map((c) => ({ ...c.flow, idleTimeoutMs }));
  }

  /** New certificate, key and CA for the connections accepted from now on (TLS only; those open keep theirs). */
  setSecureContext(context: SecureContextOptions): void {
    if (this.options.tls === undefined) throw new Error('the store does not speak TLS');
    (this.server as TlsServer).setSecureContext(context);
  }

  listen(port: number, host: string): Promise<number> {
    return listen(this.server, port, host);
  }

  #accept(accepted: Socket): void {
    const { logger, maxConnections } = this.options;
    // Refused before its reads move to the shared buffer: it has no connection to read them.
    if (this.#closing || (this.#connections.size >= maxConnections && !this.options.exemptFromLimit?.(accepted))) {
      this.#refuse(accepted.resume()); // reads, and drops, what it sends: it gets a FIN, not a reset
      return;
    }
    let connection!: ServedConnection; // made below, before any read can arrive
    const { socket, reads } = this.#readerOf(accepted, (buf, n) => connection.receive(buf, n));
    this.metrics.connectionsTotal++;
    connection = new ServedConnection(socket, this.#context, reads);
    this.#connections.set(socket, connection);
    this.#track(socket);
    // Asked first: the peer's address is a system call and an object per connection, for a line rarely logged.
    if (logger.isLevelEnabled('debug')) logger.debug({ remote: socket.remoteAddress, remotePort: socket.remotePort }, 'client connected');
  }

  /**
   * Who reads an accepted socket's input into `receive` (from a later turn on): the native
   * poller, else the shared read buffer (on a socket that takes over the handle), else
   * Node's stream with a buffer per read ('data').
   */
  #readerOf(accepted: Socket, receive: ReadReceiver): { readonly socket: Socket; readonly reads: ConnectionReads } {
    if (this.options.tls !== undefined) return this.#streamReads(accepted, receive);
    const polled = this.#nativeReads?.adopt(accepted, receive);
    if (polled !== undefined) return { socket: accepted, reads: { shared: true, native: true, switch: polled } };
    const adopted = this.#reads.adopt(accepted, receive, { allowHalfOpen: true });
    if (adopted !== undefined) return { socket: adopted, reads: { shared: true, native: false, switch: new StreamReadSwitch(adopted) } };
    if (!this.#warnedReads) this.options.logger.warn({ node: process.version }, 'shared read buffer unavailable on this Node version: reading with a buffer per read');
    this.#warnedReads = true;
    return this.#streamReads(accepted, receive);
  }

  /** Node's stream reads the socket, a buffer per read ('data'): a TLS socket's decrypted input. */
  #streamReads(accepted: Socket, receive: ReadReceiver): { readonly socket: Socket; readonly reads: ConnectionReads } {
    const socket = accepted.resume();
    socket.on('data', (chunk: Buffer) => receive(chunk, chunk.length));
    return { socket, reads: { shared: false, native: false, switch: new StreamReadSwitch(socket) } };
  }

  /** Every socket is tracked until it closes, so destroy() leaves none behind. */
  #track(socket: Socket): void {
    socket.on('error', this.#onSocketError);
    this.#sockets.add(socket);
    socket.on('close', this.#onSocketClose);
  }

  /** A socket closed: it is forgotten, its connection too (and what reads it lets go of it). */
  #closed(socket: Socket): void {
    this.#sockets.delete(socket);
    const connection = this.#connections.get(socket);
    if (connection === undefined) return;
    this.#connections.delete(socket);
    connection.reads.switch.release?.();
    if (this.#connections.size === 0) this.#onAllClosed?.();
  }

  /** Shutting down: closed at once. At MAX_CONNECTIONS: told once, then closed. */
  #refuse(socket: Socket): void {
    this.#track(socket);
    if (this.#closing) {
      socket.destroy();
      return;
    }
    const { logger, maxConnections } = this.options;
    this.metrics.rejectedConnections++;
    this.metrics.sentBytes += MAX_CONNECTIONS_REPLY.length;
    logger.warn({ remote: socket.remoteAddress, maxConnections }, 'max connections reached: refusing a connection');
    socket.end(MAX_CONNECTIONS_REPLY);
    lingerThenDestroy(socket);
  }

  /**
   * Closes the connections idle for IDLE_TIMEOUT_MS (without a message) and, like Redis's
   * client-output-buffer-limit, those whose client took none of its replies for
   * OUTPUT_STALL_TIMEOUT_MS.
   */
  #sweepConnections(): void {
    const { idleTimeoutMs, outputStallTimeoutMs, logger } = this.options;
    const now = performance.now();
    for (const c of this.#connections.values()) {
      const { socket } = c;
      if (idleTimeoutMs > 0 && c.idleMs(now) >= idleTimeoutMs) {
        logger.debug({ remote: socket.remoteAddress, idleTimeoutMs }, 'closing an idle connection');
        socket.destroy();
        continue;
      }
      if (outputStallTimeoutMs === 0) continue;
      const stalledMs = c.stalledMs(now);
      if (stalledMs < outputStallTimeoutMs) continue;
      this.metrics.outputLimitDisconnects++;
      logger.warn(
        { remote: socket.remoteAddress, remotePort: socket.remotePort, unsentBytes: socket.writableLength, stalledMs: Math.round(stalledMs) },
        'client takes none of its replies: closing the connection',
      );
      socket.destroy();
    }
  }

  /** The STATS reply, LF included. */
  statsReply(): string {
    const e = this.options.engine;
    return statsReply({
      keys: e.keyCount,
      usage_bytes: e.usageBytes,
      max_memory_bytes: e.maxMemoryBytes,
      eviction_policy: this.options.evictionPolicy,
      connections: this.#connections.size,
      total_connections: this.metrics.connectionsTotal,
      rejected_connections: this.metrics.rejectedConnections,
      evictions: e.evictions,
      expired: e.expired,
      hits: e.hits,
      misses: e.misses,
      uptime_seconds: Math.floor((performance.now() - this.#startedAt) / 1000),
    });
  }

  /**
   * Graceful: stop accepting, answer the lines already read, end every socket, and
   * resolve when all are closed; sockets still open after graceMs are cut.
   */
  async close(graceMs: number): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweep);
    if (this.server.listening) this.server.close();
    if (this.#connections.size === 0) return;
    const allClosed = new Promise<void>((resolve) => (this.#onAllClosed = resolve));
    for (const c of this.#connections.values()) c.shutdown();
    const grace = setTimeout(() => this.destroy(), graceMs);
    grace.unref();
    await allClosed;
    clearTimeout(grace);
    this.#nativeReads?.close();
  }

  /** Immediate and idempotent: closes the listener and destroys every socket. */
  destroy(): void {
    this.#closing = true;
    clearInterval(this.#sweep);
    if (this.server.listening) this.server.close();
    for (const socket of this.#sockets) socket.destroy();
    this.#nativeReads?.close();
  }
}
