import { createServer, type Server, type Socket } from 'node:net';
import {
  DELETE, EXPIRE, GET, OK, PARSE_ERROR_REPLIES, ParsedCommand, PING, QUIT, SET, SETEX, STATS, TTL, USAGE, parseCommand,
} from '../protocol/command-parser.ts';
import { LineFramer } from '../protocol/line-framer.ts';
import { listen } from '../shared/listen.ts';
import type { Logger } from '../shared/logger.ts';
import type { KvEngine } from './kv-engine.ts';
import { LINE_TOO_LONG, RESULT_ERROR, RESULT_NOT_FOUND, RESULT_OK, reasonIndexOfParseError, type StoreMetrics } from './store-metrics.ts';

export interface StoreServerOptions {
  readonly engine: KvEngine;
  readonly metrics: StoreMetrics;
  readonly logger: Logger;
  readonly maxValueBytes: number;
  /** The longest line accepted (lineBound(maxValueBytes)). */
  readonly maxLineBytes: number;
  readonly maxConnections: number;
  /** 0 = never. */
  readonly idleTimeoutMs: number;
  readonly evictionPolicy: string;
  /** A connection for which this is true is accepted past maxConnections (the store's own readiness probe). */
  readonly exemptFromLimit?: (socket: Socket) => boolean;
}

/** What a test (or STATS) can see of one connection's flow control. */
export interface ConnectionFlow {
  readonly bytesRead: number;
  /** Reply bytes queued in the socket, not yet taken by the kernel. */
  readonly writableLength: number;
  /** Reading is paused until the client takes the replies already queued. */
  readonly paused: boolean;
  /** The socket's idle time-out in ms; 0 = none. */
  readonly idleTimeoutMs: number;
}

// Replies of one chunk are written together; past this many characters they are
// written early, and if the socket is then full, the rest of the chunk waits.
const FLUSH_AT_CHARS = 64 * 1024;
// After QUIT, `line too long`, the client's FIN or shutdown the socket is ended; a peer
// that keeps its side open this long after the last reply was written is cut off.
const LINGER_MS = 5000;
// Marks an over-long line in the queue of lines that wait for 'drain'.
const OVERFLOW = Buffer.alloc(0);

const OK_REPLY = 'OK\n';
const NOT_FOUND_REPLY = 'NOT_FOUND\n';
const OUT_OF_MEMORY_REPLY = 'ERROR out of memory\n';
const LINE_TOO_LONG_REPLY = 'ERROR line too long\n';
const MAX_CONNECTIONS_REPLY = 'ERROR max connections reached\n';

/**
 * One client connection: frames lines, runs each against the engine, and writes the
 * replies of a chunk with one socket.write. When the socket is full it stops reading
 * (and stops running the rest of the chunk) until 'drain', so a client that pipelines
 * without reading holds the server to about one chunk in and FLUSH_AT_CHARS plus one
 * reply out.
 */
class ClientConnection {
  readonly socket: Socket;
  /** In the server's list of connections to flush at the end of the turn. */
  flushQueued = false;
  readonly #server: StoreServer;
  readonly #framer: LineFramer;
  #out = '';
  /** Lines that arrived while the socket was full; null when not deferring. */
  #deferred: Buffer[] | null = null;
  #deferredAt = 0;
  #paused = false;
  /** QUIT, line too long or shutdown: nothing more is read, the socket is ending. */
  #ending = false;
  /** QUIT or line too long: lines still waiting for 'drain' are dropped too. */
  #stopped = false;
  #endWhenFlushed = false;

  constructor(socket: Socket, server: StoreServer) {
    this.socket = socket;
    this.#server = server;
    this.#framer = new LineFramer(server.options.maxLineBytes, {
      onLine: (buf, start, end) => this.#onLine(buf, start, end),
      onOverflow: () => this.#onOverflow(),
    });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('drain', () => this.#onDrain());
    // The client is done sending (half-close): answer everything it sent, then end.
    socket.on('end', () => this.shutdown());
  }

  get flow(): ConnectionFlow {
    const s = this.socket;
    return { bytesRead: s.bytesRead, writableLength: s.writableLength, paused: this.#paused, idleTimeoutMs: s.timeout ?? 0 };
  }

  #onData(chunk: Buffer): void {
    const server = this.#server;
    server.metrics.receivedBytes += chunk.length;
    if (this.#ending) return; // after QUIT or an over-long line the rest is read and dropped
    server.lastTick = performance.now();
    this.#framer.push(chunk);
    // Replies go out at the end of this event-loop turn, after every connection that had
    // input has been read, as Redis writes in its beforeSleep: a burst of reads is answered
    // by a burst of writes, so a client with many connections is woken once, not per reply.
    server.flushSoon(this);
  }

  /** Writes the replies built so far (called by the server at the end of the turn). */
  flushNow(): void {
    if (this.socket.destroyed) {
      this.#out = '';
      return;
    }
    this.#flush();
    this.#afterWrite();
  }

  #onLine(buf: Buffer, start: number, end: number): void {
    if (this.#deferred !== null) {
      this.#deferred.push(buf.subarray(start, end));
      return;
    }
    this.#run(buf, start, end);
    if (this.#out.length > FLUSH_AT_CHARS) {
      this.#flush();
      if (this.socket.writableNeedDrain) this.#deferred = [];
    }
  }

  #onOverflow(): void {
    if (this.#deferred !== null) this.#deferred.push(OVERFLOW);
    else this.#lineTooLong();
  }

  #lineTooLong(): void {
    const server = this.#server;
    server.metrics.protocolErrors[LINE_TOO_LONG]!++;
    server.options.logger.warn(
      { remote: this.socket.remoteAddress, remotePort: this.socket.remotePort, maxLineBytes: server.options.maxLineBytes },
      'line too long: closing the connection',
    );
    this.#out += LINE_TOO_LONG_REPLY;
    this.#end();
  }

  /** Runs one line and appends its reply. */
  #run(buf: Buffer, start: number, end: number): void {
    const server = this.#server;
    const { engine, metrics } = server;
    const p = server.parsed;
    const code = parseCommand(buf, start, end, server.options.maxValueBytes, p);
    const command = p.command;
    let result = RESULT_OK;
    if (code !== OK) {
      this.#out += PARSE_ERROR_REPLIES[code]!;
      metrics.protocolErrors[reasonIndexOfParseError(code)]!++;
      result = RESULT_ERROR;
    } else {
      switch (command) {
        case GET: {
          const value = engine.getAt(buf, p.keyStart, p.keyEnd);
          if (value === undefined) {
            this.#out += NOT_FOUND_REPLY;
            result = RESULT_NOT_FOUND;
          } else {
            this.#out += 'VALUE ' + value + '\n';
          }
          break;
        }
        case SET:
        case SETEX: {
          const seconds = command === SET ? undefined : p.seconds;
          if (engine.setAt(buf, p.keyStart, p.keyEnd, p.valueStart, p.valueEnd, seconds) === 'ok') {
            this.#out += OK_REPLY;
          } else {
            this.#out += OUT_OF_MEMORY_REPLY;
            result = RESULT_ERROR;
          }
          break;
        }
        case DELETE:
          engine.deleteAt(buf, p.keyStart, p.keyEnd);
          this.#out += OK_REPLY;
          break;
        case USAGE:
          this.#out += 'USAGE ' + engine.usageBytes + '\n';
          break;
        case PING:
          this.#out += 'PONG\n';
          break;
        case EXPIRE:
          if (engine.expireAt(buf, p.keyStart, p.keyEnd, p.seconds)) {
            this.#out += OK_REPLY;
          } else {
            this.#out += NOT_FOUND_REPLY;
            result = RESULT_NOT_FOUND;
          }
          break;
        case TTL: {
          const ttl = engine.ttlAt(buf, p.keyStart, p.keyEnd);
          if (ttl === null) {
            this.#out += NOT_FOUND_REPLY;
            result = RESULT_NOT_FOUND;
          } else {
            this.#out += 'TTL ' + ttl + '\n';
          }
          break;
        }
        case STATS:
          this.#out += server.statsLine() + '\n';
          break;
        case QUIT:
          this.#out += 'BYE\n';
          this.#end();
          break;
      }
    }
    // One clock read per command: a command's time runs from the previous one's end
    // (or the chunk's arrival) to its own end.
    const now = performance.now();
    metrics.record(command, result, (now - server.lastTick) / 1000);
    server.lastTick = now;
  }

  /** Stops running commands; the socket ends once the replies so far are written. */
  #end(): void {
    this.#ending = true;
    this.#stopped = true;
    this.#endWhenFlushed = true;
    this.#framer.stop();
    this.#deferred = null;
  }

  #flush(): void {
    const out = this.#out;
    if (out.length === 0) return;
    this.#out = '';
    this.#server.metrics.sentBytes += out.length; // replies are ASCII: one byte per character
    this.socket.write(out, 'latin1');
  }

  #afterWrite(): void {
    if (this.#endWhenFlushed) {
      this.#endWhenFlushed = false;
      this.#finish();
      return;
    }
    if (this.socket.writableNeedDrain && !this.#paused) {
      this.#paused = true;
      this.socket.pause();
    }
  }

  #onDrain(): void {
    const deferred = this.#deferred;
    if (deferred !== null) {
      this.#server.lastTick = performance.now();
      while (this.#deferredAt < deferred.length) {
        const line = deferred[this.#deferredAt++]!;
        if (line === OVERFLOW) this.#lineTooLong();
        else this.#run(line, 0, line.length);
        if (this.#stopped) break;
        if (this.#out.length > FLUSH_AT_CHARS) {
          this.#flush();
          if (this.socket.writableNeedDrain) return; // wait for the next 'drain'
        }
      }
      this.#deferred = null;
      this.#deferredAt = 0;
      this.#flush();
    }
    if (this.#endWhenFlushed) {
      this.#endWhenFlushed = false;
      this.#finish();
    } else if (this.#paused && !this.socket.writableNeedDrain && !this.#ending) {
      this.#paused = false;
      this.socket.resume();
    }
  }

  /** Ends the socket after the queued replies; reading goes on (and is dropped) so the peer gets a FIN, not a reset. */
  #finish(): void {
    this.#flush(); // replies still waiting for the end of the turn go before the FIN
    if (this.#paused) {
      this.#paused = false;
      this.socket.resume();
    }
    // Once the last reply is handed to the kernel, the peer has LINGER_MS to close its side.
    const socket = this.socket;
    socket.end(() => setTimeout(() => socket.destroy(), LINGER_MS).unref());
  }

  /**
   * Graceful stop (server shutdown, or the client's FIN): lines already read are answered,
   * those waiting for 'drain' too, then the socket ends.
   */
  shutdown(): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#framer.stop();
    if (this.#deferred !== null) this.#endWhenFlushed = true; // #onDrain runs them, then finishes
    else this.#finish();
  }
}

/**
 * The store's TCP listener: accepts up to maxConnections clients, runs their lines
 * against the engine, and tracks every socket so shutdown can end them.
 */
export class StoreServer {
  readonly options: StoreServerOptions;
  readonly engine: KvEngine;
  readonly metrics: StoreMetrics;
  readonly server: Server;
  /** One parse result reused by every line (lines run one at a time). */
  readonly parsed = new ParsedCommand();
  /** When the last command ended (or the current chunk arrived), for command durations. */
  lastTick = 0;
  readonly #connections = new Set<ClientConnection>();
  /** Every socket, refused ones included, so destroy() leaves none behind. */
  readonly #sockets = new Set<Socket>();
  readonly #startedAt = performance.now();
  #closing = false;
  #onAllClosed: (() => void) | undefined;
  /** Connections with replies to write at the end of this event-loop turn. */
  #toFlush: ClientConnection[] = [];
  #flushScheduled = false;
  readonly #flushAll = (): void => {
    this.#flushScheduled = false;
    const list = this.#toFlush;
    this.#toFlush = [];
    for (const c of list) {
      c.flushQueued = false;
      c.flushNow();
    }
  };

  constructor(options: StoreServerOptions) {
    this.options = options;
    this.engine = options.engine;
    this.metrics = options.metrics;
    // allowHalfOpen: a client's FIN must not end our side before the replies to what it
    // sent are written (they may be waiting for 'drain'); ClientConnection ends it.
    this.server = createServer({ noDelay: true, allowHalfOpen: true }, (socket) => this.#accept(socket));
    this.server.on('error', (err) => options.logger.error({ err }, 'store listener error'));
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Flow-control state of each open connection (for tests and diagnostics). */
  connectionFlows(): ConnectionFlow[] {
    return [...this.#connections].map((c) => c.flow);
  }

  listen(port: number, host: string): Promise<number> {
    return listen(this.server, port, host);
  }

  #accept(socket: Socket): void {
    const { logger, maxConnections, idleTimeoutMs } = this.options;
    socket.on('error', (err) => logger.debug({ err: err.message, remote: socket.remoteAddress }, 'client socket error'));
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    if (this.#closing) {
      socket.destroy();
      return;
    }
    if (this.#connections.size >= maxConnections && !this.options.exemptFromLimit?.(socket)) {
      this.metrics.rejectedConnections++;
      this.metrics.sentBytes += MAX_CONNECTIONS_REPLY.length;
      logger.warn({ remote: socket.remoteAddress, maxConnections }, 'max connections reached: refusing a connection');
      socket.end(MAX_CONNECTIONS_REPLY);
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
      return;
    }
    this.metrics.connectionsTotal++;
    const connection = new ClientConnection(socket, this);
    this.#connections.add(connection);
    socket.on('close', () => {
      this.#connections.delete(connection);
      if (this.#connections.size === 0) this.#onAllClosed?.();
    });
    if (idleTimeoutMs > 0) {
      socket.setTimeout(idleTimeoutMs, () => {
        logger.debug({ remote: socket.remoteAddress, idleTimeoutMs }, 'closing an idle connection');
        socket.destroy();
      });
    }
    logger.debug({ remote: socket.remoteAddress, remotePort: socket.remotePort }, 'client connected');
  }

  /** Queues a connection's replies for the end of this event-loop turn (setImmediate runs after the poll phase's reads). */
  flushSoon(connection: ClientConnection): void {
    if (!connection.flushQueued) {
      connection.flushQueued = true;
      this.#toFlush.push(connection);
    }
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(this.#flushAll);
    }
  }

  /** The STATS reply (without LF). */
  statsLine(): string {
    const e = this.engine;
    const uptime = Math.floor((performance.now() - this.#startedAt) / 1000);
    return (
      `STATS keys=${e.keyCount} usage_bytes=${e.usageBytes} max_memory_bytes=${e.maxMemoryBytes}` +
      ` eviction_policy=${this.options.evictionPolicy} connections=${this.#connections.size}` +
      ` total_connections=${this.metrics.connectionsTotal} rejected_connections=${this.metrics.rejectedConnections}` +
      ` evictions=${e.evictions} expired=${e.expired} hits=${e.hits} misses=${e.misses} uptime_seconds=${uptime}`
    );
  }

  /**
   * Graceful: stop accepting, answer the lines already read, end every socket, and
   * resolve when all are closed; sockets still open after graceMs are cut.
   */
  async close(graceMs: number): Promise<void> {
    this.#closing = true;
    if (this.server.listening) this.server.close();
    if (this.#connections.size === 0) return;
    const allClosed = new Promise<void>((resolve) => (this.#onAllClosed = resolve));
    for (const c of this.#connections) c.shutdown();
    const grace = setTimeout(() => this.destroy(), graceMs);
    grace.unref();
    await allClosed;
    clearTimeout(grace);
  }

  /** Immediate and idempotent: closes the listener and destroys every socket. */
  destroy(): void {
    this.#closing = true;
    if (this.server.listening) this.server.close();
    for (const socket of this.#sockets) socket.destroy();
  }
}
