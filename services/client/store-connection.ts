import type { Socket } from 'node:net';
import { LineFramer } from '../protocol/line-framer.ts';
import { MAX_CONNECTIONS_REFUSAL, StoreMaxConnectionsError, StoreProtocolError, StoreTimeoutError, StoreUnavailableError } from './errors.ts';
import { RequestQueue } from './request-queue.ts';
import { StoreCommands, type Payload } from './store-commands.ts';
import { StoreSocket, type ConnectionState, type ReconnectStrategy } from './store-socket.ts';

export type { ConnectionState } from './store-socket.ts';

export interface StoreConnectionOptions {
  readonly host: string;
  readonly port: number;
  /** Time-out on every command, from the call to the reply. */
  readonly timeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Commands allowed to wait (unsent + unanswered); more are refused at once. */
  readonly maxPending?: number;
  /** Reconnect by itself after a failure (with backoff). */
  readonly reconnect?: boolean;
  /** The delay before each reconnect attempt (default: at once, then 50 ms doubling to 1 s). */
  readonly reconnectStrategy?: ReconnectStrategy;
  /** Longest reply line accepted (a GET of a 1 MiB value is ~1.4 MB of base64). */
  readonly maxReplyBytes?: number;
  /** Told of every socket this connection opens (the store's self-probe recognises its own connection by it). */
  readonly onSocket?: (socket: Socket) => void;
  /** Told each time the store refuses this connection at its MAX_CONNECTIONS. */
  readonly onRefused?: () => void;
  /** Told of every change of `state` (a pool derives its shard's up and down from these). */
  readonly onStateChange?: (state: ConnectionState) => void;
  /** Told when a command times out on this connection (the store went silent). */
  readonly onTimeout?: () => void;
}

interface Request {
  readonly payload: Payload;
  readonly deadline: number;
  readonly resolve: (reply: string) => void;
  readonly reject: (err: Error) => void;
}

const NEWLINE = Buffer.from('\n');

/**
 * One persistent connection to the store with pipelining: the commands (StoreCommands)
 * over a pipeline of requests (here) over a socket that keeps itself connected
 * (StoreSocket: connect, keep-alive, reconnect strategy, state changes).
 *
 * The pipeline has two queues, as in node-redis's commands-queue: `#unsent` (waiting for
 * the socket to connect or drain) and `#awaiting` (written, replies matched in order); a
 * deadline on every request; and the commands of one event-loop turn sent in one write.
 * While the store is unreachable, commands fail at once instead of waiting on a dead
 * socket; the socket reconnects in the background.
 *
 * After a time-out the store is silent, not gone: a paused process, or a link that drops
 * packets, still lets a new socket connect. So the socket that replaces a timed-out one
 * must answer a PING before it counts as connected, and until then commands fail at once
 * (503) instead of each waiting for its own time-out (504).
 */
export class StoreConnection extends StoreCommands {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly #maxPending: number;
  readonly #maxReplyBytes: number;
  readonly #onRefused: (() => void) | undefined;
  readonly #onTimeout: (() => void) | undefined;
  readonly #reconnect: boolean;
  readonly #socket: StoreSocket;

  /** The last socket timed out: the next one must answer a PING before it carries commands. */
  #silent = false;
  /** The PING of a socket replacing a timed-out one is on its way (its reply is not a command's). */
  #verifying = false;
  #verifyTimer: NodeJS.Timeout | undefined;
  #framer: LineFramer | undefined;
  #unsent = new RequestQueue<Request>();
  #awaiting = new RequestQueue<Request>();
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** Lines written in this turn of the event loop, sent together by #sendBatch. */
  #batch: Payload[] = [];
  #batchSocket: Socket | undefined;
  #closing: (() => void) | undefined;

  constructor(options: StoreConnectionOptions) {
    super();
    this.host = options.host;
    this.port = options.port;
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.#maxPending = options.maxPending ?? 10_000;
    this.#maxReplyBytes = options.maxReplyBytes ?? 64 * 1024 * 1024;
    this.#onRefused = options.onRefused;
    this.#onTimeout = options.onTimeout;
    this.#reconnect = options.reconnect ?? true;
    this.#socket = new StoreSocket(
      {
        host: options.host,
        port: options.port,
        connectTimeoutMs: options.connectTimeoutMs ?? this.timeoutMs,
        reconnect: this.#reconnect,
        reconnectStrategy: options.reconnectStrategy,
        onSocket: options.onSocket,
        onStateChange: options.onStateChange,
      },
      {
        opened: () => this.#onOpened(),
        data: (chunk) => this.#framer?.push(chunk),
        drain: () => this.#flush(),
        gone: (err) => this.#onGone(err),
      },
    );
  }

  get state(): ConnectionState {
    return this.#socket.state;
  }

  /** Commands sent or queued and not yet answered. */
  get pending(): number {
    return this.#unsent.length + this.#awaiting.length;
  }

  /** Connects (if not already); rejects with StoreUnavailableError when the store cannot be reached. */
  connect(): Promise<void> {
    const state = this.#socket.state;
    if (state === 'connected') return Promise.resolve();
    if (state === 'closed') return Promise.reject(new StoreUnavailableError('connection closed'));
    return this.#socket.opening ?? this.#socket.open();
  }

  command(payload: Payload): Promise<string> {
    switch (this.#socket.state) {
      case 'closed':
        return Promise.reject(new StoreUnavailableError('connection closed'));
      case 'disconnected':
        // Fail fast while the store is down; the background reconnect brings it back.
        return Promise.reject(new StoreUnavailableError(this.#unavailableMessage()));
      case 'connecting':
        // A silent store: fail fast until the new socket has answered its PING.
        if (this.#silent) return Promise.reject(new StoreUnavailableError(this.#unavailableMessage()));
        break;
      case 'idle':
        this.#socket.open().catch(() => {}); // failures reach the queued request
        break;
    }
    if (this.pending >= this.#maxPending) {
      return Promise.reject(new StoreUnavailableError(`too many pending store commands (${this.#maxPending})`));
    }
    return new Promise<string>((resolve, reject) => {
      const request: Request = { payload, deadline: performance.now() + this.timeoutMs, resolve, reject };
      if (this.#socket.state === 'connected' && this.#unsent.length === 0 && !this.#socket.writableNeedDrain) {
        this.#write(request);
      } else {
        this.#unsent.push(request);
      }
      this.#armDeadline();
    });
  }

  /** Stops reconnecting, lets pending commands finish, then closes the socket. */
  close(): Promise<void> {
    if (this.#socket.state === 'closed' && !this.#socket.socket) return Promise.resolve();
    const wasConnected = this.#socket.state === 'connected';
    this.#socket.markClosed();
    if (!wasConnected || this.pending === 0) {
      this.#teardown(new StoreUnavailableError('connection closed'));
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#closing = () => {
        this.#teardown(new StoreUnavailableError('connection closed'));
        resolve();
      };
    });
  }

  /** Closes at once, rejecting everything pending. Idempotent. */
  destroy(): void {
    this.#socket.markClosed();
    this.#teardown(new StoreUnavailableError('connection destroyed'));
  }

  /**
   * True while commands of the current event-loop turn are waiting to be sent; a pool
   * sends the rest of the turn's commands here too, so they share one write.
   */
  get batching(): boolean {
    return this.#batchSocket !== undefined;
  }

  /** The socket is open: it carries commands at once, or once the store answers a PING after a time-out. */
  #onOpened(): void {
    const socket = this.#socket.socket!;
    this.#framer = new LineFramer(this.#maxReplyBytes, {
      onLine: (buf, start, end) => this.#onReply(buf.toString('utf8', start, end)),
      onOverflow: () => this.#socket.fail(new StoreProtocolError('reply line too long')),
    });
    // The backoff is reset by the first reply, not here: a full store accepts and then
    // refuses, and a reset on connect would make the retries back-to-back.
    if (!this.#silent) return this.#ready();
    this.#verifying = true;
    this.#socket.write('PING\n');
    this.#verifyTimer = setTimeout(() => {
      if (this.#socket.socket === socket && this.#verifying) {
        this.#socket.fail(new StoreUnavailableError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`));
      }
    }, this.timeoutMs);
  }

  #ready(): void {
    this.#verifying = false;
    this.#silent = false;
    clearTimeout(this.#verifyTimer);
    this.#socket.ready();
    this.#flush();
  }

  /** Runs once per socket, whether it closed by itself or we gave up on it. */
  #onGone(err: Error): void {
    this.#dropBatch();
    this.#framer = undefined;
    // A time-out of a command: the next socket must prove the store answers (a failed
    // PING keeps it so, whatever its error). A connection that does not reconnect by
    // itself opens its next socket for the next command, as the first one.
    if (err instanceof StoreTimeoutError && this.#reconnect) this.#silent = true;
    this.#verifying = false;
    clearTimeout(this.#verifyTimer);
    this.#rejectAll(err);
  }

  #write(request: Request): void {
    if (this.#batchSocket === undefined) {
      // Every command issued in this turn of the event loop (all the HTTP requests
      // parsed from one poll of the sockets, not only one tick) goes out in one write:
      // one syscall here and one read on the store instead of one per command.
      this.#batchSocket = this.#socket.socket!;
      setImmediate(this.#sendBatch);
    }
    this.#batch.push(request.payload);
    this.#awaiting.push(request);
  }

  readonly #sendBatch = (): void => {
    const socket = this.#batchSocket;
    const batch = this.#batch;
    this.#batchSocket = undefined;
    this.#batch = [];
    // The socket died (or was replaced) meanwhile: its commands were rejected with it.
    if (!socket || socket !== this.#socket.socket || socket.destroyed) return;
    if (batch.every((p) => typeof p === 'string')) {
      socket.write(batch.length === 1 ? batch[0] + '\n' : batch.join('\n') + '\n');
      return;
    }
    const parts: Buffer[] = [];
    for (const p of batch) parts.push(typeof p === 'string' ? Buffer.from(p, 'utf8') : p, NEWLINE);
    socket.write(Buffer.concat(parts));
  };

  #flush(): void {
    const state = this.#socket.state;
    if (state !== 'connected' && state !== 'closed') return;
    if (!this.#socket.socket) return;
    while (this.#unsent.length > 0 && !this.#socket.writableNeedDrain) this.#write(this.#unsent.shift()!);
  }

  #onReply(line: string): void {
    if (line === MAX_CONNECTIONS_REFUSAL) {
      // Sent on accept, before any command is read: it answers none of the pending ones.
      this.#onRefused?.();
      this.#socket.fail(new StoreMaxConnectionsError(`store ${this.host}:${this.port} refused the connection: max connections reached`));
      return;
    }
    this.#socket.resetBackoff();
    if (this.#verifying) {
      if (line !== 'PONG') return this.#socket.fail(new StoreProtocolError(`unexpected reply to PING: ${JSON.stringify(line.slice(0, 80))}`));
      return this.#ready();
    }
    const request = this.#awaiting.shift();
    if (!request) {
      this.#socket.fail(new StoreProtocolError(`unsolicited reply from store: ${JSON.stringify(line.slice(0, 80))}`));
      return;
    }
    request.resolve(line);
    if (this.#closing && this.pending === 0) this.#closing();
  }

  #armDeadline(): void {
    if (this.#deadlineTimer) return;
    const oldest = this.#awaiting.peek() ?? this.#unsent.peek();
    if (!oldest) return;
    this.#deadlineTimer = setTimeout(() => this.#checkDeadlines(), Math.max(0, oldest.deadline - performance.now()) + 1);
  }

  #checkDeadlines(): void {
    this.#deadlineTimer = undefined;
    const now = performance.now();
    const head = this.#awaiting.peek();
    if (head && head.deadline <= now) {
      // The store stopped answering on this socket. Replies carry no ids, so the
      // stream cannot be resynchronised: fail everything and start a new connection
      // at once (which must then answer a PING first).
      const err = new StoreTimeoutError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`);
      this.#rejectAll(err);
      this.#socket.resetBackoff();
      this.#socket.fail(err);
      this.#onTimeout?.();
    }
    // Unsent commands (still connecting or waiting for drain) time out one by one.
    while (!this.#awaiting.peek() && this.#unsent.peek() && this.#unsent.peek()!.deadline <= now) {
      this.#unsent.shift()!.reject(new StoreTimeoutError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`));
    }
    this.#armDeadline();
    if (this.#closing && this.pending === 0) this.#closing();
  }

  #rejectAll(err: Error): void {
    for (const r of this.#awaiting.drain()) r.reject(err);
    for (const r of this.#unsent.drain()) r.reject(err);
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
  }

  #teardown(err: Error): void {
    this.#closing = undefined;
    this.#rejectAll(err);
    this.#dropBatch();
    clearTimeout(this.#verifyTimer);
    this.#socket.destroy();
  }

  /** Forgets unsent lines of a socket that is gone (their commands are rejected with it). */
  #dropBatch(): void {
    this.#batch = [];
    this.#batchSocket = undefined;
  }

  #unavailableMessage(): string {
    return this.#socket.lastError?.message ?? `store ${this.host}:${this.port} is unavailable`;
  }
}
