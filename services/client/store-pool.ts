import { StoreUnavailableError } from './errors.ts';
import { StoreCommands, type Payload } from './store-commands.ts';
import { StoreConnection, type ConnectionState, type StoreConnectionOptions } from './store-connection.ts';

export interface StorePoolOptions extends Omit<StoreConnectionOptions, 'onStateChange' | 'onTimeout'> {
  /** Persistent connections kept open; commands are pipelined on them. */
  readonly size?: number;
  /** Told when the pool becomes able to serve (`up`) or stops being able to, once per change. */
  readonly onUpChange?: (up: boolean) => void;
}

/**
 * A small, fixed set of persistent connections. Each turn of the event loop takes the
 * next connected member, round-robin, and the rest of that turn's commands join it (so
 * they leave in one write, see StoreConnection); while none is connected commands go to
 * one that fails fast (or waits, if it is connecting), so no request hangs on a dead store.
 *
 * A time-out on any member means the store went silent: from then on every command fails
 * at once (503) instead of queueing behind the members still waiting on it, until a
 * member has reconnected and the store has answered its PING (StoreConnection).
 */
export class StorePool extends StoreCommands {
  readonly connections: readonly StoreConnection[];
  readonly host: string;
  readonly port: number;
  #next = 0;
  #current: StoreConnection | undefined;
  #silent = false;
  #up = false;
  readonly #onUpChange: ((up: boolean) => void) | undefined;

  constructor({ size = 4, onUpChange, ...options }: StorePoolOptions) {
    super();
    this.host = options.host;
    this.port = options.port;
    this.#onUpChange = onUpChange;
    const memberOptions: StoreConnectionOptions = {
      ...options,
      onStateChange: (state) => {
        if (state === 'connected') this.#silent = false;
        this.#updateUp();
      },
      onTimeout: () => {
        this.#silent = true;
        this.#updateUp();
      },
    };
    this.connections = Array.from({ length: size }, () => new StoreConnection(memberOptions));
  }

  /** True when a command would be sent now: a member is connected and the store is not silent. */
  get up(): boolean {
    return this.#up;
  }

  /** True after a time-out, until the store answers again: commands fail at once meanwhile. */
  get silent(): boolean {
    return this.#silent;
  }

  #updateUp(): void {
    const up = !this.#silent && this.connections?.some((c) => c.state === 'connected') === true;
    if (up === this.#up) return;
    this.#up = up;
    this.#onUpChange?.(up);
  }

  /** Opens every connection; resolves when all have been tried, true if any is up. */
  async connect(): Promise<boolean> {
    const results = await Promise.allSettled(this.connections.map((c) => c.connect()));
    return results.some((r) => r.status === 'fulfilled');
  }

  command(payload: Payload): Promise<string> {
    if (this.#silent) return Promise.reject(this.#silentError());
    const current = this.#current;
    if (current !== undefined && current.batching && current.state === 'connected') return current.command(payload);
    const n = this.connections.length;
    const start = this.#next;
    this.#next = (start + 1) % n;
    for (let i = 0; i < n; i++) {
      const conn = this.connections[(start + i) % n]!;
      if (conn.state === 'connected') {
        this.#current = conn;
        return conn.command(payload);
      }
    }
    return this.connections[start]!.command(payload);
  }

  /**
   * USAGE over a pooled connection, for the readiness probe: it succeeds exactly when
   * the pool can serve a request, and it never needs a new connection the store's
   * MAX_CONNECTIONS could refuse while the pool is connected. With no member connected
   * it first tries to connect them (without waiting for their backoff), so readiness
   * follows a store that comes back. Not told to the observer: a probe is not traffic.
   */
  async probeUsage(): Promise<number> {
    const connected = this.connections.find((c) => c.state === 'connected');
    if (connected) {
      // Also the way out of silence when the member that timed out cannot reconnect (a
      // full store refusing it): a connected member that answers proves the store answers.
      const usage = await connected.usage();
      if (this.#silent) {
        this.#silent = false;
        this.#updateUp();
      }
      return usage;
    }
    if (this.#silent) throw this.#silentError();
    let first: StoreConnection;
    try {
      first = await Promise.any(this.connections.map(async (c) => (await c.connect(), c)));
    } catch (err) {
      throw (err as AggregateError).errors[0];
    }
    return first.usage();
  }

  /** Drops the connections whose peer is at none of the host's current addresses; they reconnect to it. */
  leaveUnlessAt(addresses: readonly string[]): number {
    return this.connections.filter((c) => c.leaveUnlessAt(addresses)).length;
  }

  /** How many connections are in each state, for kvbackend_store_pool_connections{state}. */
  stateCounts(): Record<ConnectionState, number> {
    const counts: Record<ConnectionState, number> = { idle: 0, connecting: 0, connected: 0, disconnected: 0, closed: 0 };
    for (const c of this.connections) counts[c.state]++;
    return counts;
  }

  #silentError(): StoreUnavailableError {
    return new StoreUnavailableError(`store ${this.host}:${this.port} stopped answering; failing fast until it answers again`);
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }

  destroy(): void {
    for (const c of this.connections) c.destroy();
  }
}
