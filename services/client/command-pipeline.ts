import type { Socket } from 'node:net';
import { TurnBatcher } from '../shared/turn-batcher.ts';
import { StoreTimeoutError, StoreUnavailableError } from './errors.ts';
import { RequestQueue } from './request-queue.ts';
import type { Payload } from './store-commands.ts';

/** Where the pipeline writes: the socket in use, if it is ready for commands. */
export interface PipelineTransport {
  /** The open socket that carries commands now, or undefined. */
  readonly commandSocket: Socket | undefined;
}

export interface CommandPipelineOptions {
  /** Time-out of every command, from the call to the reply. */
  readonly timeoutMs: number;
  /** Commands allowed to wait (unsent + unanswered); more are refused at once. */
  readonly maxPending: number;
  /** `host:port`, for messages. */
  readonly target: string;
  /** The oldest written command timed out: everything pending was rejected with `err`; the socket must go. */
  readonly onTimeout: (err: StoreTimeoutError) => void;
  /** Nothing is pending any more (a graceful close waits for this). */
  readonly onIdle: () => void;
}

interface Request {
  readonly payload: Payload;
  readonly deadline: number;
  readonly resolve: (reply: string) => void;
  readonly reject: (err: Error) => void;
}

const NEWLINE = Buffer.from('\n');

/**
 * The requests of one connection, as node-redis's commands-queue: two queues, `#unsent`
 * (waiting for the socket to connect or drain) and `#awaiting` (written, replies matched
 * in order); a deadline on every request; and every command of one event-loop turn sent
 * in one write. It never opens or closes a socket: it writes to the transport's socket
 * when there is one, and is told each reply line.
 */
export class CommandPipeline {
  readonly #options: CommandPipelineOptions;
  readonly #transport: PipelineTransport;
  #unsent = new RequestQueue<Request>();
  #awaiting = new RequestQueue<Request>();
  #deadlineTimer: NodeJS.Timeout | undefined;
  /**
   * Lines written in this turn of the event loop, sent together at its end: every command
   * issued in the turn (all the HTTP requests parsed from one poll of the sockets, not
   * only one tick) goes out in one write, one syscall here and one read on the store
   * instead of one per command.
   */
  readonly #batch = new TurnBatcher<Payload>((batch) => this.#sendBatch(batch));
  /** The socket the batch was started on. */
  #batchSocket: Socket | undefined;

  constructor(options: CommandPipelineOptions, transport: PipelineTransport) {
    this.#options = options;
    this.#transport = transport;
  }

  /** Commands sent or queued and not yet answered. */
  get pending(): number {
    return this.#unsent.length + this.#awaiting.length;
  }

  /** True while commands of the current event-loop turn wait to be sent together. */
  get batching(): boolean {
    return this.#batchSocket !== undefined;
  }

  /** Queues a command: written now when the socket is ready and nothing waits before it, else once it is. */
  send(payload: Payload): Promise<string> {
    const { maxPending, timeoutMs } = this.#options;
    if (this.pending >= maxPending) return Promise.reject(new StoreUnavailableError(`too many pending store commands (${maxPending})`));
    return new Promise<string>((resolve, reject) => {
      const request: Request = { payload, deadline: performance.now() + timeoutMs, resolve, reject };
      const socket = this.#transport.commandSocket;
      if (socket && this.#unsent.length === 0 && !socket.writableNeedDrain) this.#write(socket, request);
      else this.#unsent.push(request);
      this.#armDeadline();
    });
  }

  /** Writes what waits, while the socket takes it. */
  flush(): void {
    const socket = this.#transport.commandSocket;
    if (!socket) return;
    while (this.#unsent.length > 0 && !socket.writableNeedDrain) this.#write(socket, this.#unsent.shift()!);
  }

  /** A reply line: it answers the oldest written command; false when none was waiting (unsolicited). */
  reply(line: string): boolean {
    const request = this.#awaiting.shift();
    if (!request) return false;
    request.resolve(line);
    if (this.pending === 0) this.#options.onIdle();
    return true;
  }

  /** Fails every pending command (the socket is gone, or the connection closes). */
  rejectAll(err: Error): void {
    for (const r of this.#awaiting.drain()) r.reject(err);
    for (const r of this.#unsent.drain()) r.reject(err);
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
  }

  /** Forgets unsent lines of a socket that is gone (their commands are rejected with it). */
  dropBatch(): void {
    this.#batch.discard();
    this.#batchSocket = undefined;
  }

  #write(socket: Socket, request: Request): void {
    this.#batchSocket ??= socket;
    this.#batch.add(request.payload);
    this.#awaiting.push(request);
  }

  #sendBatch(batch: Payload[]): void {
    const socket = this.#batchSocket;
    this.#batchSocket = undefined;
    // The socket died (or was replaced) meanwhile: its commands were rejected with it.
    if (!socket || socket !== this.#transport.commandSocket || socket.destroyed) return;
    if (batch.every((p) => typeof p === 'string')) {
      socket.write(batch.length === 1 ? batch[0] + '\n' : batch.join('\n') + '\n');
      return;
    }
    const parts: Buffer[] = [];
    for (const p of batch) parts.push(typeof p === 'string' ? Buffer.from(p, 'utf8') : p, NEWLINE);
    socket.write(Buffer.concat(parts));
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
    const { target, timeoutMs } = this.#options;
    const head = this.#awaiting.peek();
    if (head && head.deadline <= now) {
      // The store stopped answering on this socket. Replies carry no ids, so the stream
      // cannot be resynchronised: everything fails, and the socket must be replaced.
      const err = new StoreTimeoutError(`store ${target} did not answer within ${timeoutMs} ms`);
      this.rejectAll(err);
      this.#options.onTimeout(err);
    }
    // Unsent commands (still connecting or waiting for drain) time out one by one.
    while (!this.#awaiting.peek() && this.#unsent.peek() && this.#unsent.peek()!.deadline <= now) {
      this.#unsent.shift()!.reject(new StoreTimeoutError(`store ${target} did not answer within ${timeoutMs} ms`));
    }
    this.#armDeadline();
    if (this.pending === 0) this.#options.onIdle();
  }
}
