import { connect, type Socket } from 'node:net';
import { LineFramer } from '../protocol/line-framer.ts';
import { MAX_CONNECTIONS_REFUSAL, StoreMaxConnectionsError, StoreProtocolError, StoreTimeoutError, StoreUnavailableError } from './errors.ts';
import { RequestQueue } from './request-queue.ts';
import { StoreCommands, type Payload } from './store-commands.ts';

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

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'disconnected' | 'closed';

interface Request {
  readonly payload: Payload;
  readonly deadline: number;
  readonly resolve: (reply: string) => void;
  readonly reject: (err: Error) => void;
}

const NEWLINE = Buffer.from('\n');
const MIN_BACKOFF_MS = 50;
const MAX_BACKOFF_MS = 1000;

/**
 * One persistent connection to the store with pipelining. Two queues, as in
 * node-redis: `#unsent` (waiting for the socket to connect or drain) and `#awaiting`
 * (written, replies matched in order). While the store is unreachable, commands fail
 * at once instead of waiting on a dead socket; a reconnect runs in the background.
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
  readonly #connectTimeoutMs: number;
  readonly #maxPending: number;
  readonly #reconnect: boolean;
  readonly #maxReplyBytes: number;
  readonly #onSocket: ((socket: Socket) => void) | undefined;
  readonly #onRefused: (() => void) | undefined;
  readonly #onStateChange: ((state: ConnectionState) => void) | undefined;
  readonly #onTimeout: (() => void) | undefined;

  #state: ConnectionState = 'idle';
  /** The last socket timed out: the next one must answer a PING before it carries commands. */
  #silent = false;
  /** The PING of a socket replacing a timed-out one is on its way (its reply is not a command's). */
  #verifying = false;
  #socket: Socket | undefined;
  #unsent = new RequestQueue<Request>();
  #awaiting = new RequestQueue<Request>();
  #deadlineTimer: NodeJS.Timeout | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #backoffMs = 0;
  #lastError: Error | undefined;
  #connecting: Promise<void> | undefined;
  /** Lines written in this turn of the event loop, sent together by #sendBatch. */
  #batch: Payload[] = [];
  #batchSocket: Socket | undefined;
  #closing: (() => void) | undefined;
  /** Completes the connection once the verifying PING is answered. */
  #onVerified: (() => void) | undefined;

  constructor(options: StoreConnectionOptions) {
    super();
    this.host = options.host;
    this.port = options.port;
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? this.timeoutMs;
    this.#maxPending = options.maxPending ?? 10_000;
    this.#reconnect = options.reconnect ?? true;
    this.#maxReplyBytes = options.maxReplyBytes ?? 64 * 1024 * 1024;
    this.#onSocket = options.onSocket;
    this.#onRefused = options.onRefused;
    this.#onStateChange = options.onStateChange;
    this.#onTimeout = options.onTimeout;
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#onStateChange?.(state);
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** Commands sent or queued and not yet answered. */
  get pending(): number {
    return this.#unsent.length + this.#awaiting.length;
  }

  /** Connects (if not already); rejects with StoreUnavailableError when the store cannot be reached. */
  connect(): Promise<void> {
    if (this.#state === 'connected') return Promise.resolve();
    if (this.#state === 'closed') return Promise.reject(new StoreUnavailableError('connection closed'));
    return this.#connecting ?? this.#open();
  }

  command(payload: Payload): Promise<string> {
    switch (this.#state) {
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
        this.#open().catch(() => {}); // failures reach the queued request
        break;
    }
    if (this.pending >= this.#maxPending) {
      return Promise.reject(new StoreUnavailableError(`too many pending store commands (${this.#maxPending})`));
    }
    return new Promise<string>((resolve, reject) => {
      const request: Request = { payload, deadline: performance.now() + this.timeoutMs, resolve, reject };
      if (this.#state === 'connected' && this.#unsent.length === 0 && !this.#socket!.writableNeedDrain) {
        this.#write(request);
      } else {
        this.#unsent.push(request);
      }
      this.#armDeadline();
    });
  }

  /** Stops reconnecting, lets pending commands finish, then closes the socket. */
  close(): Promise<void> {
    if (this.#state === 'closed' && !this.#socket) return Promise.resolve();
    const wasConnected = this.#state === 'connected';
    this.#setState('closed');
    clearTimeout(this.#reconnectTimer);
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
    this.#setState('closed');
    clearTimeout(this.#reconnectTimer);
    this.#teardown(new StoreUnavailableError('connection destroyed'));
  }

  #open(): Promise<void> {
    this.#setState('connecting');
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.#socket = socket;
    this.#onSocket?.(socket);
    const framer = new LineFramer(this.#maxReplyBytes, {
      onLine: (buf, start, end) => this.#onReply(buf.toString('utf8', start, end)),
      onOverflow: () => this.#fail(socket, new StoreProtocolError('reply line too long')),
    });

    this.#connecting = new Promise<void>((resolve, reject) => {
      const connectTimer = setTimeout(() => {
        socket.destroy(new StoreUnavailableError(`connect to ${this.host}:${this.port} timed out after ${this.#connectTimeoutMs} ms`));
      }, this.#connectTimeoutMs);

      const connected = (): void => {
        this.#verifying = false;
        this.#silent = false;
        this.#setState('connected');
        this.#lastError = undefined;
        this.#connecting = undefined;
        this.#flush();
        resolve();
      };
      socket.once('connect', () => {
        clearTimeout(connectTimer);
        if (this.#socket !== socket) return;
        // The backoff is reset by the first reply, not here: a full store accepts and
        // then refuses, and a reset on connect would make the retries back-to-back.
        if (!this.#silent) return connected();
        // Replacing a timed-out socket: connected only once the store answers again.
        this.#verifying = true;
        this.#onVerified = connected;
        socket.write('PING\n');
        const verifyTimer = setTimeout(() => {
          if (this.#socket === socket && this.#verifying) {
            socket.destroy(new StoreTimeoutError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`));
          }
        }, this.timeoutMs);
        socket.once('close', () => clearTimeout(verifyTimer));
      });
      socket.on('data', (chunk: Buffer) => framer.push(chunk));
      socket.on('drain', () => this.#flush());
      socket.on('error', (err) => {
        this.#lastError = err instanceof StoreUnavailableError ? err : new StoreUnavailableError(`store ${this.host}:${this.port}: ${err.message}`);
      });
      socket.on('close', () => {
        clearTimeout(connectTimer);
        const err = this.#lastError ?? new StoreUnavailableError(`store ${this.host}:${this.port} closed the connection`);
        reject(err);
        this.#onSocketGone(socket, err);
      });
    });
    return this.#connecting;
  }

  /** Runs once per socket, whether it closed by itself or we gave up on it. */
  #onSocketGone(socket: Socket, err: Error): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    this.#dropBatch();
    this.#connecting = undefined;
    this.#lastError = err;
    // A time-out (of a command or of the verifying PING): the next socket must prove the store answers.
    if (err instanceof StoreTimeoutError && this.#reconnect) this.#silent = true;
    this.#verifying = false;
    this.#onVerified = undefined;
    this.#rejectAll(err);
    if (this.#state === 'closed') return;
    if (!this.#reconnect) {
      this.#setState('idle');
      return;
    }
    this.#setState('disconnected');
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(MIN_BACKOFF_MS, this.#backoffMs * 2));
    this.#reconnectTimer = setTimeout(() => {
      if (this.#state === 'disconnected') this.#open().catch(() => {});
    }, delay);
    this.#reconnectTimer.unref();
  }

  /**
   * True while commands of the current event-loop turn are waiting to be sent; a pool
   * sends the rest of the turn's commands here too, so they share one write.
   */
  get batching(): boolean {
    return this.#batchSocket !== undefined;
  }

  #write(request: Request): void {
    if (this.#batchSocket === undefined) {
      // Every command issued in this turn of the event loop (all the HTTP requests
      // parsed from one poll of the sockets, not only one tick) goes out in one write:
      // one syscall here and one read on the store instead of one per command.
      this.#batchSocket = this.#socket!;
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
    if (!socket || socket !== this.#socket || socket.destroyed) return;
    if (batch.every((p) => typeof p === 'string')) {
      socket.write(batch.length === 1 ? batch[0] + '\n' : batch.join('\n') + '\n');
      return;
    }
    const parts: Buffer[] = [];
    for (const p of batch) parts.push(typeof p === 'string' ? Buffer.from(p, 'utf8') : p, NEWLINE);
    socket.write(Buffer.concat(parts));
  };

  #flush(): void {
    const socket = this.#socket;
    if (this.#state !== 'connected' && this.#state !== 'closed') return;
    if (!socket) return;
    while (this.#unsent.length > 0 && !socket.writableNeedDrain) this.#write(this.#unsent.shift()!);
  }

  #onReply(line: string): void {
    if (line === MAX_CONNECTIONS_REFUSAL) {
      // Sent on accept, before any command is read: it answers none of the pending ones.
      this.#onRefused?.();
      this.#fail(this.#socket!, new StoreMaxConnectionsError(`store ${this.host}:${this.port} refused the connection: max connections reached`));
      return;
    }
    this.#backoffMs = 0;
    if (this.#verifying) {
      if (line !== 'PONG') {
        this.#fail(this.#socket!, new StoreProtocolError(`unexpected reply to PING: ${JSON.stringify(line.slice(0, 80))}`));
        return;
      }
      this.#onVerified?.();
      return;
    }
    const request = this.#awaiting.shift();
    if (!request) {
      this.#fail(this.#socket!, new StoreProtocolError(`unsolicited reply from store: ${JSON.stringify(line.slice(0, 80))}`));
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
      // stream cannot be resynchronised: fail everything and start a new connection.
      const err = new StoreTimeoutError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`);
      this.#rejectAll(err);
      this.#backoffMs = 0;
      this.#fail(this.#socket!, err);
      this.#onTimeout?.();
    }
    // Unsent commands (still connecting or waiting for drain) time out one by one.
    while (!this.#awaiting.peek() && this.#unsent.peek() && this.#unsent.peek()!.deadline <= now) {
      this.#unsent.shift()!.reject(new StoreTimeoutError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`));
    }
    this.#armDeadline();
    if (this.#closing && this.pending === 0) this.#closing();
  }

  #fail(socket: Socket, err: Error): void {
    socket.destroy();
    this.#onSocketGone(socket, err);
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
    const socket = this.#socket;
    this.#socket = undefined;
    this.#connecting = undefined;
    this.#dropBatch();
    socket?.destroy();
  }

  /** Forgets unsent lines of a socket that is gone (their commands are rejected with it). */
  #dropBatch(): void {
    this.#batch = [];
    this.#batchSocket = undefined;
  }

  #unavailableMessage(): string {
    return this.#lastError?.message ?? `store ${this.host}:${this.port} is unavailable`;
  }
}
