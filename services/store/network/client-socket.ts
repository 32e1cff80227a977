/**
 * A client's connection as the store serves it: Node's socket (node-client-socket.ts; TLS,
 * and where the native add-on is not built) or the add-on's descriptor without one
 * (native-client-socket.ts). ServedConnection and ReplyBuffer see only this.
 */
export interface ClientSocket {
  readonly destroyed: boolean;
  /** Reply bytes queued here, not yet taken by the kernel. */
  readonly writableLength: number;
  /** The kernel refused some of the queued bytes: the client is not taking its replies. */
  readonly writableNeedDrain: boolean;
  /** The peer's address; undefined once closed. */
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  /**
   * Writes buf[0, n) straight to the kernel, nothing being queued: the bytes it took (n, or
   * fewer when its buffer filled up, 0 when it was full), or -1 when this socket does not
   * write directly or the write failed (queue() then reports it the socket's way).
   */
  writeNow(buf: Buffer, n: number): number;
  /** Queues buf[from, n) behind what is queued; buf must stay untouched until writableLength is 0. */
  queue(buf: Buffer, from: number, n: number): void;
  /** After the queued bytes, a FIN; the peer then has LINGER_MS to close its side before the socket is closed. */
  end(): void;
  /** Closes at once. */
  destroy(): void;
  /** From now on `sink` hears what happens to the socket (and, for the add-on's, its input). */
  serve(sink: ClientSink): void;
  /** Whom it serves (DROPPING_SINK until serve()). */
  readonly sink: ClientSink;
}

/** Who is at the other end: what the store's own readiness probe is told apart by (MAX_CONNECTIONS does not count it). */
export type ClientPeer = Pick<ClientSocket, 'remoteAddress' | 'remotePort'>;

/** What hears a client socket: the served connection. */
export interface ClientSink {
  /** Input bytes buf[start, end), valid only during the call. */
  receive(buf: Buffer, start: number, end: number): void;
  /** The queued replies are all with the kernel. */
  drained(): void;
  /** The client half-closed: no more input comes. */
  inputEnded(): void;
}

/** Hears nothing: a refused connection's sink (what it sends is read and dropped). */
export const DROPPING_SINK: ClientSink = {
  receive(): void {},
  drained(): void {},
  inputEnded(): void {},
};

/**
 * After QUIT, `line too long`, the client's FIN, shutdown or a refusal the socket is
 * ended; a peer that keeps its side open this long after the last reply is cut off.
 */
export const LINGER_MS = 5000;
