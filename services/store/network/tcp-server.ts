import { createServer, type Server, type Socket } from 'node:net';
import type { SecureContextOptions, Server as TlsServer } from 'node:tls';
import { getSystemErrorName } from 'node:util';
import { MAX_CONNECTIONS_REPLY, statsReply } from '../../protocol/replies.ts';
import { listen } from '../../shared/listen.ts';
import type { Logger } from '../../shared/logger.ts';
import { ServedConnection, TURN_SLICE_MS, type ConnectionContext, type ConnectionFlow, type ConnectionReads } from './served-connection.ts';
import type { SocketIo } from './native-io.ts';
import { NativeClients, NativeClientSocket, type TcpHandle } from './native-client-socket.ts';
import { NodeClientSocket } from './node-client-socket.ts';
import { DROPPING_SINK, type ClientPeer, type ClientSocket } from './client-socket.ts';
import { listenerHandle } from '../../shared/node-internals.ts';
import { StreamReadSwitch } from './read-switch.ts';
import { CommandRunner } from './command-runner.ts';
import { ReplyBufferPool } from './reply-buffer.ts';
import { SharedReadBuffer, type ReadReceiver } from './shared-read-buffer.ts';
import type { StoreEngine } from '../engine/engine-api.ts';
import { TURN_BUDGET, type StoreMetrics } from '../store-metrics.ts';
import { HeldInputPool } from './held-input-pool.ts';
import { TurnScheduler } from './turn-scheduler.ts';
import { ConnectionTable } from './connection-table.ts';
import { checkPeriodMs } from './check-period.ts';
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
  readonly exemptFromLimit?: (peer: ClientPeer) => boolean;
  /** A connection's time budget per turn, ms (default TURN_SLICE_MS; a test may set 0). */
  readonly turnSliceMs?: number;
  /** The time per turn for pipelined work, ms (default TURN_BUDGET_MS; a test may set 0). */
  readonly turnBudgetMs?: number;
  /**
   * Client connections taken from the listener as descriptors, read and written through the
   * native add-on (native-client-socket.ts); without it, net.Sockets read by Node.
   */
  readonly socketIo?: SocketIo | undefined;
  /** How long an ended native socket waits for its peer's FIN (LINGER_MS; a test may set less). */
  readonly lingerMs?: number;
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
 * Closed connections kept to serve new ones: a connection's objects (its state, framer,
 * reply buffer and native socket, ~0.7 KB) are then made once, not per connection, and a
 * churn of short connections leaves the collector about what its commands do. As many
 * as a burst of closes is likely to see reopened; the rest are left to the collector.
 */
const SPARE_CONNECTIONS = 256;

/**
 * How often the connection sweep runs, for the time-outs in effect (0 = off): that of the
 * shorter (checkPeriodMs), so a connection is closed at most that much after its time-out;
 * undefined when both are off.
 */
export function sweepPeriodMs(idleTimeoutMs: number, outputStallTimeoutMs: number): number | undefined {
  const timeouts = [idleTimeoutMs, outputStallTimeoutMs].filter((t) => t > 0);
  if (timeouts.length === 0) return undefined;
  return checkPeriodMs(Math.min(...timeouts));
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
  readonly #connections = new ConnectionTable<ServedConnection>();
  /** Every net.Socket client, refused ones included, so destroy() leaves none behind (the native ones: #native). */
  readonly #sockets = new Set<ClientSocket>();
  /** TLS connections still in their handshake (tls-listener.ts), for destroy() too. */
  readonly #handshaking = new Set<Socket>();
  /** A Node socket's 'error' listener, one for every socket: it gets its socket as `this`. */
  readonly #onSocketError: (this: Socket, err: Error) => void;
  readonly #socketClosed: (client: ClientSocket) => void;
  readonly #startedAt = performance.now();
  readonly #reads = new SharedReadBuffer();
  readonly #native: NativeClients | undefined;
  /** Closed native connections whose objects serve the next ones (#acceptHandle). */
  readonly #spare: ServedConnection[] = [];
  /** Where connections' copies of held input come from (one pool for all). */
  readonly #heldCopies = new HeldInputPool();
  #reused = 0;
  readonly #sweep: NodeJS.Timeout | undefined;
  #closing = false;
  #warnedReads = false;
  #onAllClosed: (() => void) | undefined;

  constructor(options: StoreServerOptions) {
    this.options = options;
    this.metrics = options.metrics;
    const logger = options.logger;
    // Asked first: a native socket's peer address is a system call, for a line rarely logged.
    const logSocketError = (err: Error, client: ClientPeer): void => {
      if (logger.isLevelEnabled('debug')) logger.debug({ err: err.message, remote: client.remoteAddress }, 'client socket error');
    };
    this.#onSocketError = function (this: Socket, err: Error): void {
      logSocketError(err, this);
    };
    const closed = (client: ClientSocket): void => this.#closed(client);
    this.#socketClosed = closed;
    const runner = new CommandRunner({ engine: options.engine, metrics: options.metrics, maxValueBytes: options.maxValueBytes, statsReply: () => this.statsReply(), password: options.password });
    // A TLS port's connections are Node's: its TLS stack reads and writes them.
    this.#native =
      options.socketIo === undefined || options.tls !== undefined
        ? undefined
        : new NativeClients(options.socketIo, {
            closed,
            failed: (client, err) => logSocketError(err, client),
            lingerMs: options.lingerMs,
          });
    this.#context = {
      maxLineBytes: options.maxLineBytes,
      turnSliceMs: options.turnSliceMs ?? TURN_SLICE_MS,
      runner,
      replyPool: new ReplyBufferPool(),
      heldCopies: this.#heldCopies,
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
        : createTlsListener(options.tls, options.logger, (socket) => this.#accept(socket), (raw) => this.#trackHandshake(raw));
    this.server.on('error', (err) => options.logger.error({ err }, 'store listener error'));
    // Before any connection can be accepted: 'listening' is emitted before the event loop polls again.
    if (this.#native !== undefined) this.server.once('listening', () => this.#takeAccepts());
    const period = sweepPeriodMs(options.idleTimeoutMs, options.outputStallTimeoutMs);
    if (period !== undefined) {
      this.#sweep = setInterval(() => this.#sweepConnections(), period);
      this.#sweep.unref();
    }
  }

  /**
   * The store stands idle: what the server keeps for the next busy moment goes (the reply
   * buffers and input copies kept for reuse, closed connections' objects), so its memory
   * leaves the process (the buffers at once, the objects at the idle collection).
   */
  releaseIdle(): void {
    this.#context.replyPool.releaseFree();
    this.#heldCopies.releaseFree();
    this.#spare.length = 0;
  }

  /** Kept for reuse now: reply buffers, input copies, closed connections (for tests and diagnostics). */
  get kept(): { readonly replyBuffers: number; readonly inputCopies: number; readonly connections: number } {
    return { replyBuffers: this.#context.replyPool.freeCount, inputCopies: this.#heldCopies.freeCount, connections: this.#spare.length };
  }

  /** Connections served by a closed one's objects (for tests and diagnostics). */
  get reusedConnections(): number {
    return this.#reused;
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Flow-control state of each open connection (for tests and diagnostics). */
  connectionFlows(): ConnectionFlow[] {
    const { idleTimeoutMs } = this.options;
    return this.#connections.values().map((c) => ({ ...c.flow, idleTimeoutMs }));
  }

  /** New certificate, key and CA for the connections accepted from now on (TLS only; those open keep theirs). */
  setSecureContext(context: SecureContextOptions): void {
    if (this.options.tls === undefined) throw new Error('the store does not speak TLS');
    (this.server as TlsServer).setSecureContext(context);
  }

  listen(port: number, host: string): Promise<number> {
    return listen(this.server, port, host);
  }

  /**
   * From now on the listener's accepted connections come here as Node's TCP handles,
   * before Node would wrap each in a net.Socket (native-client-socket.ts says why). Where
   * this Node's listener has no handle to take them from, they stay net.Sockets (#accept).
   */
  #takeAccepts(): void {
    const handle = listenerHandle(this.server) as { onconnection?: unknown } | null;
    if (handle === null || typeof handle.onconnection !== 'function') {
      this.options.logger.warn({ node: process.version }, "the listener's handle is out of reach on this Node: client connections go through net.Socket");
      return;
    }
    handle.onconnection = (err: number, client: TcpHandle | undefined): void => {
      if (err !== 0 || client === undefined) {
        // As Node's own listener reports a failed accept (EMFILE, ...).
        const code = getSystemErrorName(err);
        this.server.emit('error', Object.assign(new Error(`accept ${code}`), { code, errno: err, syscall: 'accept' }));
        return;
      }
      this.#acceptHandle(client);
    };
  }

  /**
   * An accepted connection as a descriptor (#takeAccepts), served by a closed connection's
   * objects where there is one no turn queue still holds (#closed keeps them), else by new ones.
   */
  #acceptHandle(handle: TcpHandle): void {
    let spare = this.#spare.pop();
    while (spare !== undefined && spare.turnQueues !== 0) spare = this.#spare.pop(); // left to the collector
    const native = this.#native!;
    const client = native.adopt(handle, spare?.socket as NativeClientSocket | undefined);
    if (client === undefined) {
      handle.close();
      return;
    }
    // Not in #sockets: the native clients close their own (destroy(), #native.close()).
    if (this.#mustRefuse(client)) {
      client.serve(DROPPING_SINK); // reads, and drops, what it sends: it gets a FIN, not a reset
      this.#refuse(client);
      return;
    }
    const reused = spare?.socket === client ? spare : undefined;
    if (reused !== undefined) this.#reused++;
    this.#serve(client, client, reused);
  }

  /** An accepted net.Socket: every TLS connection, and all of them without the native add-on. */
  #accept(accepted: Socket): void {
    // Refused before its reads move to the shared buffer: it has no connection to read them.
    if (this.#mustRefuse(accepted)) {
      this.#refuse(this.#nodeClient(accepted.resume())); // reads, and drops, what it sends: it gets a FIN, not a reset
      return;
    }
    let connection!: ServedConnection; // made below, before any read can arrive
    const { socket, reads } = this.#readerOf(accepted, (buf, start, end) => connection.receive(buf, start, end));
    connection = this.#serve(this.#nodeClient(socket), reads);
  }

  #nodeClient(socket: Socket): NodeClientSocket {
    socket.on('error', this.#onSocketError);
    const client = new NodeClientSocket(socket, this.options.socketIo, this.#socketClosed);
    this.#sockets.add(client);
    return client;
  }

  #mustRefuse(peer: ClientPeer): boolean {
    return this.#closing || (this.#connections.size >= this.options.maxConnections && !this.options.exemptFromLimit?.(peer));
  }

  #serve(client: ClientSocket, reads: ConnectionReads, reuse?: ServedConnection): ServedConnection {
    this.metrics.connectionsTotal++;
    const connection = reuse !== undefined ? reuse.reopen(client, reads) : new ServedConnection(client, this.#context, reads);
    this.#connections.add(connection);
    client.serve(connection);
    const logger = this.options.logger;
    // Asked first: the peer's address is a system call and an object per connection, for a line rarely logged.
    if (logger.isLevelEnabled('debug')) logger.debug({ remote: client.remoteAddress, remotePort: client.remotePort }, 'client connected');
    return connection;
  }

  /**
   * Who reads an accepted socket's input into `receive` (from a later turn on): the native
   * poller, else the shared read buffer (on a socket that takes over the handle), else
   * Node's stream with a buffer per read ('data').
   */
  #readerOf(accepted: Socket, receive: ReadReceiver): { readonly socket: Socket; readonly reads: ConnectionReads } {
    if (this.options.tls !== undefined) return this.#streamReads(accepted, receive);
    const adopted = this.#reads.adopt(accepted, receive, { allowHalfOpen: true });
    if (adopted !== undefined) return { socket: adopted, reads: { shared: true, native: false, switch: new StreamReadSwitch(adopted) } };
    if (!this.#warnedReads) this.options.logger.warn({ node: process.version }, 'shared read buffer unavailable on this Node version: reading with a buffer per read');
    this.#warnedReads = true;
    return this.#streamReads(accepted, receive);
  }

  /** Node's stream reads the socket, a buffer per read ('data'): a TLS socket's decrypted input. */
  #streamReads(accepted: Socket, receive: ReadReceiver): { readonly socket: Socket; readonly reads: ConnectionReads } {
    const socket = accepted.resume();
    socket.on('data', (chunk: Buffer) => receive(chunk, 0, chunk.length));
    return { socket, reads: { shared: false, native: false, switch: new StreamReadSwitch(socket) } };
  }

  /** A TLS connection in its handshake is tracked until it closes, so destroy() leaves none behind. */
  #trackHandshake(raw: Socket): void {
    raw.on('error', this.#onSocketError);
    this.#handshaking.add(raw);
    raw.once('close', () => this.#handshaking.delete(raw));
  }

  /** A socket closed: it is forgotten, its connection too (a native one's kept for the next connection, up to SPARE_CONNECTIONS). */
  #closed(client: ClientSocket): void {
    this.#sockets.delete(client);
    const connection = client.sink;
    if (!(connection instanceof ServedConnection) || !this.#connections.remove(connection)) return;
    if (client instanceof NativeClientSocket && this.#spare.length < SPARE_CONNECTIONS && !this.#closing) this.#spare.push(connection);
    if (this.#connections.size === 0) this.#onAllClosed?.();
  }

  /** Shutting down: closed at once. At MAX_CONNECTIONS: told once, then closed. */
  #refuse(client: ClientSocket): void {
    if (this.#closing) {
      client.destroy();
      return;
    }
    const { logger, maxConnections } = this.options;
    const reply = MAX_CONNECTIONS_REPLY;
    this.metrics.rejectedConnections++;
    this.metrics.sentBytes += reply.length;
    logger.warn({ remote: client.remoteAddress, maxConnections }, 'max connections reached: refusing a connection');
    const taken = client.writeNow(reply, reply.length);
    if (taken < reply.length) client.queue(reply, Math.max(taken, 0), reply.length);
    client.end();
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
    this.#native?.close();
  }

  /** Immediate and idempotent: closes the listener and destroys every socket. */
  destroy(): void {
    this.#closing = true;
    clearInterval(this.#sweep);
    if (this.server.listening) this.server.close();
    for (const socket of this.#sockets) socket.destroy();
    for (const raw of this.#handshaking) raw.destroy();
    this.#native?.close();
  }
}
