import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { track } from './cleanup.ts';

/**
 * TLS for every LineClient.connect of this process (the TLS run of the store suites,
 * TEST_STORE_TLS=1: the harness starts its stores with TLS and sets this).
 */
let defaultTls: ConnectionOptions | undefined;
export function connectOverTls(options: ConnectionOptions | undefined): void {
  defaultTls = options;
}

/**
 * A raw line-protocol client for store tests: sends bytes exactly as given and hands
 * back reply lines in order (without the LF), so tests see what the wire carries.
 */
export class LineClient {
  readonly socket: Socket;
  /** Every complete line received so far. */
  readonly received: string[] = [];
  /** Resolves when the server closed the connection (or it failed); never rejects. */
  readonly closed: Promise<void>;
  #read = 0;
  #partial = '';
  #waiter: { n: number; resolve: (lines: string[]) => void; reject: (err: Error) => void } | undefined;
  #isClosed = false;
  /** The socket error that ended the connection, if any (e.g. ECONNRESET). */
  error: Error | undefined;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.#onData(chunk));
    socket.on('error', (err) => (this.error = err));
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.#isClosed = true;
        this.#waiter?.reject(new Error(`connection closed after ${this.received.length} lines (partial: ${JSON.stringify(this.#partial.slice(0, 80))})`));
        this.#waiter = undefined;
        resolve();
      }),
    );
  }

  static connect(port: number, host = '127.0.0.1'): Promise<LineClient> {
    if (defaultTls !== undefined) return LineClient.connectTls(port, defaultTls, host);
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host });
      const client = track(new LineClient(socket));
      socket.once('connect', () => resolve(client));
      socket.once('error', reject);
    });
  }

  /** Over TLS: resolves once the handshake is done (rejects when it fails). */
  static connectTls(port: number, options: ConnectionOptions, host = '127.0.0.1'): Promise<LineClient> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({ port, host, ...options });
      const client = track(new LineClient(socket));
      socket.once('secureConnect', () => resolve(client));
      socket.once('error', reject);
      socket.once('close', () => reject(new Error('closed before the TLS handshake ended')));
    });
  }

  #onData(chunk: string): void {
    let start = 0;
    let lf: number;
    while ((lf = chunk.indexOf('\n', start)) !== -1) {
      this.received.push(this.#partial + chunk.slice(start, lf));
      this.#partial = '';
      start = lf + 1;
    }
    this.#partial += chunk.slice(start);
    const w = this.#waiter;
    if (w && this.received.length - this.#read >= w.n) {
      this.#waiter = undefined;
      w.resolve(this.#take(w.n));
    }
  }

  #take(n: number): string[] {
    const lines = this.received.slice(this.#read, this.#read + n);
    this.#read += n;
    return lines;
  }

  /** Writes raw bytes (a string is sent as UTF-8). */
  send(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The next `n` unread reply lines; rejects if the connection closes first. */
  lines(n: number): Promise<string[]> {
    if (this.received.length - this.#read >= n) return Promise.resolve(this.#take(n));
    if (this.#isClosed) return Promise.reject(new Error(`connection closed after ${this.received.length} lines`));
    return new Promise((resolve, reject) => (this.#waiter = { n, resolve, reject }));
  }

  async line(): Promise<string> {
    return (await this.lines(1))[0]!;
  }

  /** Sends one command line (LF added) and resolves with its reply. */
  request(line: string | Buffer): Promise<string> {
    this.send(typeof line === 'string' ? line + '\n' : Buffer.concat([line, Buffer.from('\n')]));
    return this.line();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * A raw socket to the store that writes and never reads: nothing attaches a 'data'
 * listener, so its kernel buffers fill up. Destroyed by destroyAll() in afterEach.
 */
export function nonReader(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = track(connect({ port, host: '127.0.0.1' }));
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}
