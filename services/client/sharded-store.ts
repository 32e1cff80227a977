import type { RingHolder } from '../ring/ring-holder.ts';
import { RingMembership, type RingChange } from '../ring/ring-membership.ts';
import { ShardRing } from '../ring/shard-ring.ts';
import { StoreTimeoutError, StoreUnavailableError } from './errors.ts';
import type { CommandObserver } from './store-commands.ts';
import type { ConnectionState } from './store-connection.ts';
import { StorePool, type StorePoolOptions } from './store-pool.ts';

/** Where a shard lives and what it is called (a parsed KV_STORE entry). */
export interface ShardAddress {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

/** One shard on the ring: its name (its ring identity and metric label) and its own pool. */
export interface Shard {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly pool: StorePool;
}

export interface ShardedStoreOptions {
  readonly shards: readonly ShardAddress[];
  /** Settings of every shard's pool (size, time-out, reply bound). */
  readonly pool: Omit<StorePoolOptions, 'host' | 'port' | 'onUpChange' | 'onRefused'>;
  /** SHARD_EJECT_AFTER: consecutive transport failures that take a shard out of the ring; 0 = never. */
  readonly ejectAfter?: number;
  /** SHARD_RETRY_MS: how long an ejected shard stays out. */
  readonly retryMs?: number;
  /** The observer of a shard's typed commands (its `shard`-labelled metrics). */
  readonly observerFor?: (shard: string) => CommandObserver | undefined;
  /** The shard refused one of its pool's connections at its MAX_CONNECTIONS. */
  readonly onRefused?: (shard: string) => void;
  /** A shard's pool became able to serve, or stopped being able to (once per change). */
  readonly onShardUp?: (shard: string, up: boolean) => void;
  /** A new ring is in use: an ejection, a readmission, a membership change. */
  readonly onRingChange?: (change: RingChange<Shard>) => void;
}

/**
 * The ring over per-shard pools (SPEC §6): a command on a key goes to the key's shard,
 * routed on the ring in use, which a membership change or an ejection swaps whole (a
 * request routes on one ring; nothing is rebuilt per request). Each shard has its own
 * pool, so a shard that is down or silent fails only its own keys, fast, while the
 * others serve; a pool reconnects by itself.
 *
 * It also shows the surface of a single pool (connections, state counts, connect, close,
 * destroy) summed over the shards, so code written for one pool serves a ring of one.
 */
export class ShardedStore {
  readonly membership: RingMembership<Shard>;
  readonly #holder: RingHolder<Shard>;
  readonly #options: ShardedStoreOptions;
  /** The pools by shard name: those configured, and those removed while their commands finish. */
  #byName = new Map<string, Shard>();

  constructor(options: ShardedStoreOptions) {
    this.#options = options;
    const shards = options.shards.map((a) => this.#makeShard(a));
    for (const s of shards) this.#byName.set(s.name, s);
    this.membership = new RingMembership<Shard>({
      members: shards,
      ejectAfter: options.ejectAfter ?? 0,
      retryMs: options.retryMs ?? 30_000,
      onChange: options.onRingChange,
    });
    this.#holder = this.membership.holder;
  }

  /** The ring requests are routed on now. */
  get ring(): ShardRing<Shard> {
    return this.membership.ring;
  }

  /** Every configured shard, ejected or not. */
  get shards(): readonly Shard[] {
    return this.membership.members;
  }

  /** Every connection of every configured shard. */
  get connections(): StorePool['connections'] {
    return this.shards.flatMap((s) => s.pool.connections);
  }

  /** The shard a key is routed to now: one read of the ring in use, no hash for a ring of one. */
  shardFor(key: string): Shard {
    const ring = this.#holder.ring;
    return ring.size === 1 ? ring.members[0]! : ring.shardFor(key);
  }

  get(key: string): Promise<Buffer | null> {
    return this.shardFor(key).pool.get(key);
  }

  set(key: string, value: Buffer | string, ttlSeconds?: number): Promise<void> {
    return this.shardFor(key).pool.set(key, value, ttlSeconds);
  }

  del(key: string): Promise<void> {
    return this.shardFor(key).pool.del(key);
  }

  /** Opens every shard's pool; true if any connection came up. */
  async connect(): Promise<boolean> {
    const results = await Promise.all(this.shards.map((s) => s.pool.connect()));
    return results.some(Boolean);
  }

  /** Connections in each state, summed over the shards. */
  stateCounts(): Record<ConnectionState, number> {
    const counts: Record<ConnectionState, number> = { idle: 0, connecting: 0, connected: 0, disconnected: 0, closed: 0 };
    for (const s of this.shards) {
      const c = s.pool.stateCounts();
      for (const state of Object.keys(counts) as ConnectionState[]) counts[state] += c[state];
    }
    return counts;
  }

  /**
   * A new membership while serving: shards that stay keep their pools (and the commands
   * in flight on them), new ones get a pool, removed ones leave the ring first and their
   * pools close once their pending commands are answered. Only the keys of shards that
   * joined or left move.
   */
  setMembers(addresses: readonly ShardAddress[]): void {
    new ShardRing(addresses); // refuses duplicate or clashing names before any pool is made
    const next: Shard[] = [];
    const removed: Shard[] = [];
    const names = new Set(addresses.map((a) => a.name));
    for (const a of addresses) {
      const existing = this.#byName.get(a.name);
      if (existing && existing.host === a.host && existing.port === a.port) {
        next.push(existing);
      } else {
        if (existing) removed.push(existing);
        next.push(this.#makeShard(a));
      }
    }
    for (const s of this.#byName.values()) if (!names.has(s.name)) removed.push(s);
    this.membership.setMembers(next); // validates the names; throws before anything changes
    this.#byName = new Map(next.map((s) => [s.name, s]));
    for (const s of next) s.pool.connect().catch(() => {});
    for (const s of removed) void s.pool.close();
  }

  /** Stops readmission timers, lets pending commands finish, closes every pool. */
  async close(): Promise<void> {
    this.membership.close();
    await Promise.all(this.shards.map((s) => s.pool.close()));
  }

  destroy(): void {
    this.membership.close();
    for (const s of this.shards) s.pool.destroy();
  }

  #makeShard(address: ShardAddress): Shard {
    const { name, host, port } = address;
    const { onRefused, onShardUp, observerFor } = this.#options;
    const pool = new StorePool({
      ...this.#options.pool,
      host,
      port,
      onRefused: onRefused && (() => onRefused(name)),
      onUpChange: onShardUp && ((up) => onShardUp(name, up)),
    });
    const observer = observerFor?.(name);
    const ejecting = (this.#options.ejectAfter ?? 0) > 0;
    if (ejecting) {
      // Transport failures (unreachable, silent) count towards ejection; any answer, even an ERROR, ends the run.
      pool.observer = (command, result, seconds, error) => {
        observer?.(command, result, seconds, error);
        if (error instanceof StoreUnavailableError || error instanceof StoreTimeoutError) this.membership.recordFailure(name);
        else this.membership.recordSuccess(name);
      };
    } else {
      pool.observer = observer;
    }
    return Object.freeze({ name, host, port, pool });
  }
}
