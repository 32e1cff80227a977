import type { LookupFunction, Socket } from 'node:net';
import { LineFramer } from '../protocol/line-framer.ts';
import { DEFAULT_MAX_REPLY_BYTES } from '../protocol/limits.ts';
import { decodeReply, ERROR_REASONS } from '../protocol/replies.ts';
import type { Secret } from '../shared/secret.ts';
import { CommandPipeline } from './command-pipeline.ts';
import { AUTHENTICATION_REQUIRED_REFUSAL, MAX_CONNECTIONS_REFUSAL, StoreAuthError, StoreMaxConnectionsError, StoreProtocolError, StoreTimeoutError, StoreUnavailableError } from './errors.ts';
import { StoreCommands, type Payload } from './store-commands.ts';
import { StoreSocket, type ConnectionState, type ReconnectStrategy } from './store-socket.ts';
import type { ClientTls } from './client-tls.ts';

export type { ConnectionState } from './store-socket.ts';

export interface StoreConnectionOptions {
  readonly host: string;
  readonly port: number;
  /** How the host's name becomes an address on each connect (default: the system's lookup). */
  readonly lookup?: LookupFunction;
  /** Time-out on every command, from the call to the reply. */
  readonly timeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Commands allowed to wait (unsent + unanswered); more are refused at once. */
  readonly maxPending?: number;
  /** Reconnect by itself after a failure (with backoff). */
  readonly reconnect?: boolean;
  /** The delay before each reconnect attempt (default: at once, then 50 ms doubling to 1 s). */
  readonly reconnectStrategy?: ReconnectStrategy;
  /** Longest reply line accepted (replyLineBound of the store's MAX_VALUE_BYTES; default DEFAULT_MAX_REPLY_BYTES). */
  readonly maxReplyBytes?: number;
  /** Told of every socket this connection opens (the store's self-probe recognises its own connection by it). */
  readonly onSocket?: (socket: Socket) => void;
  /** Told each time the store refuses this connection at its MAX_CONNECTIONS. */
  readonly onRefused?: () => void;
  /** Told of every change of `state` (a pool derives its shard's up and down from these). */
  readonly onStateChange?: (state: ConnectionState) => void;
  /** Told when a command times out on this connection (the store went silent). */
  readonly onTimeout?: () => void;
  /** The store's password (SPEC §8): sent with AUTH first on every socket, before any command. */
  readonly password?: Secret | undefined;
  /** Told each time the store refuses the password (or wants one this connection has not got). */
  readonly onAuthFailure?: (err: StoreAuthError) => void;
  /** Speak TLS to the store (KV_STORE_TLS): every socket's handshake comes before its AUTH and any command. */
  readonly tls?: ClientTls | undefined;
}

/**
 * One persistent connection to the store with pipelining, in three layers: the typed
 * commands (StoreCommands), the pipeline of requests (CommandPipeline: queues, deadlines,
 * per-turn batching), and a socket that keeps itself connected (StoreSocket: connect,
 * keep-alive, reconnect strategy, state changes). This class wires them: which state
 * accepts a command, what a reply or a lost socket means.
 *
 * While the store is unreachable, commands fail at once instead of waiting on a dead
 * socket; the socket reconnects in the background.
 *
 * After a time-out the store is silent, not gone: a paused process, or a link that drops
 * packets, still lets a new socket connect. So the socket that replaces a timed-out one
 * must answer a PING before it counts as connected, and until then commands fail at once
 * (503) instead of each waiting for its own time-out (504).
 *
 * With a password, every socket sends `AUTH <password>` first and carries commands only
 * once the store has said OK (or that it has no password: a client may be given the
 * password before its store is), so queued commands never reach the store ahead of it.
 */
export class StoreConnection extends StoreCommands {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly #maxReplyBytes: number;
  readonly #onRefused: (() => void) | undefined;
  readonly #onTimeout: (() => void) | undefined;
  readonly #reconnect: boolean;
  readonly #socket: StoreSocket;
  readonly #password: Secret | undefined;
  readonly #onAuthFailure: ((err: StoreAuthError) => void) | undefined;
  /** The AUTH of the current socket is on its way (its reply is not a command's). */
  #authenticating = false;

  /** The last socket timed out: the next one must answer a PING before it carries commands. */
  #silent = false;
  /** The PING of a socket replacing a timed-out one is on its way (its reply is not a command's). */
  #verifying = false;
  #verifyTimer: NodeJS.Timeout | undefined;
  #framer: LineFramer | undefined;
  readonly #pipeline: CommandPipeline;
  #closing: (() => void) | undefined;

  constructor(options: StoreConnectionOptions) {
    super();
    this.host = options.host;
    this.port = options.port;
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.#maxReplyBytes = options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    this.#onRefused = options.onRefused;
    this.#onTimeout = options.onTimeout;
    this.#reconnect = options.reconnect ?? true;
    this.#password = options.password;
    this.#onAuthFailure = options.onAuthFailure;
    this.#socket = new StoreSocket(
      {
        host: options.host,
        port: options.port,
        lookup: options.lookup,
        connectTimeoutMs: options.connectTimeoutMs ?? this.timeoutMs,
        reconnect: this.#reconnect,
        reconnectStrategy: options.reconnectStrategy,
        onSocket: options.onSocket,
        onStateChange: options.onStateChange,
        tls: options.tls,
      },
      {
        opened: () => this.#onOpened(),
        data: (chunk) => this.#framer?.push(chunk),
        drain: () => this.#pipeline.flush(),
        gone: (err) => this.#onGone(err),
      },
    );
    const socket = this.#socket;
    this.#pipeline = new CommandPipeline(
      {
        timeoutMs: this.timeoutMs,
        maxPending: options.maxPending ?? 10_000,
        target: `${options.host}:${options.port}`,
        onTimeout: (err) => {
          // A new socket at once (which must then answer a PING first).
          socket.resetBackoff();
          socket.fail(err);
          this.#onTimeout?.();
        },
        onIdle: () => this.#closing?.(),
      },
      {
        // Commands go out on a ready socket (and, while closing, on the one still open).
        get commandSocket() {
          return socket.state === 'connected' || socket.state === 'closed' ? socket.socket : undefined;
        },
      },
    );
  }

  get state(): ConnectionState {
    return this.#socket.state;
  }

  /** Commands sent or queued and not yet answered. */
  get pending(): number {
    return this.#pipeline.pending;
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
    return this.#pipeline.send(payload);
  }

  /**
   * Drops a connected socket whose peer is at none of `addresses` (the host's addresses
   * looked up again), so the reconnect that follows reaches the host where it is now.
   * True when it did.
   */
  leaveUnlessAt(addresses: readonly string[]): boolean {
    const remote = this.#socket.socket?.remoteAddress?.replace(/^::ffff:/, '');
    if (this.#socket.state !== 'connected' || remote === undefined || addresses.includes(remote)) return false;
    this.#socket.fail(new StoreUnavailableError(`store ${this.host}:${this.port} moved from ${remote} to ${addresses.join(', ')}`));
    return true;
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
    return this.#pipeline.batching;
  }

  /**
   * The socket is open: it carries commands at once, or once the store has taken the
   * password (AUTH) and, after a time-out, answered a PING; both go in one write.
   */
  #onOpened(): void {
    const socket = this.#socket.socket!;
    this.#framer = new LineFramer(this.#maxReplyBytes, {
      onLine: (buf, start, end) => this.#onReply(buf.toString('utf8', start, end)),
      onOverflow: () => this.#socket.fail(new StoreProtocolError('reply line too long')),
    });
    // The backoff is reset by the first reply, not here: a full store accepts and then
    // refuses, and a reset on connect would make the retries back-to-back.
    this.#authenticating = this.#password !== undefined;
    this.#verifying = this.#silent;
    if (!this.#authenticating && !this.#verifying) return this.#ready();
    let first = this.#authenticating ? `AUTH ${this.#password!.reveal()}\n` : '';
    if (this.#verifying) first += 'PING\n';
    this.#socket.write(first);
    this.#verifyTimer = setTimeout(() => {
      if (this.#socket.socket === socket && (this.#verifying || this.#authenticating)) {
        this.#socket.fail(new StoreUnavailableError(`store ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`));
      }
    }, this.timeoutMs);
  }

  #ready(): void {
    this.#verifying = false;
    this.#authenticating = false;
    this.#silent = false;
    clearTimeout(this.#verifyTimer);
    this.#socket.ready();
    this.#pipeline.flush();
  }

  /** Runs once per socket, whether it closed by itself or was given up on. */
  #onGone(err: Error): void {
    this.#pipeline.dropBatch();
    this.#framer = undefined;
    // A time-out of a command: the next socket must prove the store answers (a failed
    // PING keeps it so, whatever its error). A connection that does not reconnect by
    // itself opens its next socket for the next command, as the first one.
    if (err instanceof StoreTimeoutError && this.#reconnect) this.#silent = true;
    this.#verifying = false;
    this.#authenticating = false;
    clearTimeout(this.#verifyTimer);
    this.#pipeline.rejectAll(err);
  }

  #onReply(line: string): void {
    if (line === MAX_CONNECTIONS_REFUSAL) {
      // Sent on accept, before any command is read: it answers none of the pending ones.
      this.#onRefused?.();
      this.#socket.fail(new StoreMaxConnectionsError(`store ${this.host}:${this.port} refused the connection: max connections reached`));
      return;
    }
    if (line === AUTHENTICATION_REQUIRED_REFUSAL) {
      // A store with a password, and this connection has none: no command can go through.
      return this.#authFailed(`store ${this.host}:${this.port} requires a password (it replied ${line})${this.#password === undefined ? ': none is set' : ''}`);
    }
    if (this.#authenticating) {
      this.#authenticating = false;
      const reply = decodeReply(line);
      // A refused password keeps the backoff growing: retrying at once cannot succeed.
      // `authentication not enabled`: the store has no password (yet); the connection serves.
      if (reply.kind === 'error' && reply.reason !== ERROR_REASONS.authenticationNotEnabled) {
        return this.#authFailed(`store ${this.host}:${this.port} refused the password (it replied ${line})`);
      }
      if (reply.kind !== 'ok' && reply.kind !== 'error') return this.#socket.fail(new StoreProtocolError(`unexpected reply to AUTH: ${JSON.stringify(line.slice(0, 80))}`));
      this.#socket.resetBackoff();
      if (!this.#verifying) this.#ready();
      return;
    }
    this.#socket.resetBackoff();
    if (this.#verifying) {
      if (decodeReply(line).kind !== 'pong') return this.#socket.fail(new StoreProtocolError(`unexpected reply to PING: ${JSON.stringify(line.slice(0, 80))}`));
      return this.#ready();
    }
    if (!this.#pipeline.reply(line)) this.#socket.fail(new StoreProtocolError(`unsolicited reply from store: ${JSON.stringify(line.slice(0, 80))}`));
  }

  #authFailed(message: string): void {
    const err = new StoreAuthError(message);
    this.#onAuthFailure?.(err);
    this.#socket.fail(err);
  }

  #teardown(err: Error): void {
    this.#closing = undefined;
    this.#pipeline.rejectAll(err);
    this.#pipeline.dropBatch();
    clearTimeout(this.#verifyTimer);
    this.#socket.destroy();
  }

  #unavailableMessage(): string {
    return this.#socket.lastError?.message ?? `store ${this.host}:${this.port} is unavailable`;
  }
}
