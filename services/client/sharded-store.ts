import { RingMembership, type RingChange } from '../ring/ring-membership.ts';
import { ShardRing } from '../ring/shard-ring.ts';
import { StoreTimeoutError, StoreUnavailableError, type StoreAuthError } from './errors.ts';
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
  readonly pool: Omit<StorePoolOptions, 'host' | 'port' | 'onUpChange' | 'onRefused' | 'onAuthFailure'>;
  /** SHARD_EJECT_AFTER: consecutive transport failures that take a shard out of the ring; 0 = never. */
  readonly ejectAfter?: number;
  /** SHARD_RETRY_MS: how long an ejected shard stays out. */
  readonly retryMs?: number;
  /** The observer of a shard's typed commands (its `shard`-labelled metrics). */
  readonly observerFor?: (shard: string) => CommandObserver | undefined;
  /** The shard refused one of its pool's connections at its MAX_CONNECTIONS. */
  readonly onRefused?: (shard: string) => void;
  /** The shard refused the password of one of its pool's connections (or wants one and there is none). */
  readonly onAuthFailure?: (shard: string, err: StoreAuthError) => void;
  /** A shard's pool became able to serve, or stopped being able to (once per change). */
  readonly onShardUp?: (shard: string, up: boolean) => void;
  /** A new ring is in use: an ejection, a readmission, a membership change. */
  readonly onRingChange?: (change: RingChange<Shard>) => void;
}

/** What a request on a key gets while the ring has no member yet (discovery has found none). */
function noShardsError(): StoreUnavailableError {
  return new StoreUnavailableError('no store shard yet: discovery has found none');
}

/**
 * The ring over per-shard pools (SPEC §6): a command on a key goes to the key's shard,
 * routed on the ring in use, which a membership change or an ejection swaps whole (a
 * request routes on one ring; nothing is rebuilt per request). Each shard has its own
 * pool, so a shard that is down or silent fails only its own keys, fast, while the
 * others serve; a pool reconnects by itself.
 *
 * Discovered membership starts with no shard (every request fails fast until the first
 * members come) and may ask that new members join only once their pools are up, so a
 * shard still starting never gets its keys' requests.
 *
 * It also shows the surface of a single pool (connections, state counts, connect, close,
 * destroy) summed over the shards, so code written for one pool serves a ring of one.
 */
export class ShardedStore {
  #membership: RingMembership<Shard> | undefined;
  readonly #options: ShardedStoreOptions;
  /** The pools by shard name: those on the ring, and those removed while their commands finish. */
  #byName = new Map<string, Shard>();
  /** New members whose pools are connecting: each joins the ring when its pool is up. */
  readonly #joining = new Map<string, Shard>();
  #closed = false;

  constructor(options: ShardedStoreOptions) {
    this.#options = options;
    const shards = options.shards.map((a) => this.#makeShard(a));
    for (const s of shards) this.#byName.set(s.name, s);
    if (shards.length > 0) this.#membership = this.#newMembership(shards);
  }

  /** The members, which of them are ejected, the ring in use; throws while there is no member. */
  get membership(): RingMembership<Shard> {
    if (!this.#membership) throw noShardsError();
    return this.#membership;
  }

  /** The ring requests are routed on now (undefined while there is no member). */
  get ring(): ShardRing<Shard> | undefined {
    return this.#membership?.ring;
  }

  /** Every shard on the ring, ejected or not. */
  get shards(): readonly Shard[] {
    return this.#membership?.members ?? [];
  }

  /** Discovered shards waiting for their pools to come up before they join the ring. */
  get joining(): readonly Shard[] {
    return [...this.#joining.values()];
  }

  isEjected(name: string): boolean {
    return this.#membership?.isEjected(name) ?? false;
  }

  /** Rings swapped in since start-up (the `kvbackend_store_ring_changes_total` count). */
  get ringChanges(): number {
    return this.#membership?.holder.swaps ?? 0;
  }

  /** Every connection of every shard on the ring. */
  get connections(): StorePool['connections'] {
    return this.shards.flatMap((s) => s.pool.connections);
  }

  /** The shard a key is routed to now: one read of the ring in use, no hash for a ring of one. */
  shardFor(key: string): Shard | undefined {
    const ring = this.#membership?.holder.ring;
    if (ring === undefined) return undefined;
    return ring.size === 1 ? ring.members[0]! : ring.shardFor(key);
  }

  /** The shard on the ring (or joining it) named so. */
  shard(name: string): Shard | undefined {
    return this.#joining.get(name) ?? this.#byName.get(name);
  }

  get(key: string): Promise<Buffer | null> {
    const shard = this.shardFor(key);
    return shard ? shard.pool.get(key) : Promise.reject(noShardsError());
  }

  set(key: string, value: Buffer | string, ttlSeconds?: number): Promise<void> {
    const shard = this.shardFor(key);
    return shard ? shard.pool.set(key, value, ttlSeconds) : Promise.reject(noShardsError());
  }

  del(key: string): Promise<void> {
    const shard = this.shardFor(key);
    return shard ? shard.pool.del(key) : Promise.reject(noShardsError());
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
   * joined or left move. With `joinWhenUp` (discovery, once the ring has members), a new
   * shard joins the ring only when its pool is up; a shard already on the ring stays on
   * it whatever its pool's state, and one that moved to another address keeps its place.
   */
  setMembers(addresses: readonly ShardAddress[], { joinWhenUp = false }: { joinWhenUp?: boolean } = {}): void {
    new ShardRing(addresses); // refuses an empty list, duplicate or clashing names before any pool is made
    const names = new Set(addresses.map((a) => a.name));
    const sameAddress = (s: Shard | undefined, a: ShardAddress) => s !== undefined && s.host === a.host && s.port === a.port;
    const onRing = new Set(this.shards.map((s) => s.name));
    const next: Shard[] = [];
    const removed: Shard[] = [];
    const joining = new Map<string, Shard>();
    for (const a of addresses) {
      const existing = this.#byName.get(a.name);
      const waiting = this.#joining.get(a.name);
      if (onRing.has(a.name) && sameAddress(existing, a)) {
        next.push(existing!);
      } else if (onRing.has(a.name) || !joinWhenUp || this.#membership === undefined) {
        if (existing) removed.push(existing);
        if (waiting) removed.push(waiting);
        next.push(this.#makeShard(a));
      } else if (sameAddress(waiting, a)) {
        joining.set(a.name, waiting!);
      } else {
        if (waiting) removed.push(waiting);
        joining.set(a.name, this.#makeShard(a));
      }
    }
    for (const s of this.#byName.values()) if (!names.has(s.name)) removed.push(s);
    for (const s of this.#joining.values()) if (!names.has(s.name)) removed.push(s);
    // A refresh that only adds shards still starting leaves the ring as it is.
    const current = new Set(this.shards);
    const ringChanged = this.#membership === undefined || next.length !== current.size || next.some((s) => !current.has(s));
    if (next.length > 0 && ringChanged) {
      if (this.#membership) this.#membership.setMembers(next);
      else this.#membership = this.#newMembership(next, true);
    }
    this.#byName = new Map(next.map((s) => [s.name, s]));
    this.#joining.clear();
    for (const [name, s] of joining) this.#joining.set(name, s);
    for (const s of [...next, ...joining.values()]) s.pool.connect().catch(() => {});
    for (const s of removed) void s.pool.close();
    for (const s of joining.values()) if (s.pool.up) this.#admit(s.name);
  }

  /** Stops readmission timers, lets pending commands finish, closes every pool. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#membership?.close();
    await Promise.all([...this.shards, ...this.#joining.values()].map((s) => s.pool.close()));
  }

  destroy(): void {
    this.#closed = true;
    this.#membership?.close();
    for (const s of [...this.shards, ...this.#joining.values()]) s.pool.destroy();
  }

  #newMembership(members: readonly Shard[], announce = false): RingMembership<Shard> {
    const membership = new RingMembership<Shard>({
      members,
      ejectAfter: this.#options.ejectAfter ?? 0,
      retryMs: this.#options.retryMs ?? 30_000,
      onChange: this.#options.onRingChange,
    });
    // The first members of a discovered ring are a change too: logged and counted like the next ones.
    if (announce) membership.setMembers(members);
    return membership;
  }

  /** A joining shard's pool is up: it takes its place on the ring. */
  #admit(name: string): void {
    const shard = this.#joining.get(name);
    if (!shard || this.#closed || !this.#membership) return;
    this.#joining.delete(name);
    this.#byName.set(name, shard);
    this.#membership.setMembers([...this.shards, shard]);
  }

  #makeShard(address: ShardAddress): Shard {
    const { name, host, port } = address;
    const { onRefused, onShardUp, observerFor, onAuthFailure } = this.#options;
    const pool = new StorePool({
      ...this.#options.pool,
      host,
      port,
      onRefused: onRefused && (() => onRefused(name)),
      onAuthFailure: onAuthFailure && ((err) => onAuthFailure(name, err)),
      onUpChange: (up) => {
        onShardUp?.(name, up);
        if (up && this.#joining.get(name)?.pool === pool) this.#admit(name);
      },
    });
    const observer = observerFor?.(name);
    const ejecting = (this.#options.ejectAfter ?? 0) > 0;
    if (ejecting) {
      // Transport failures (unreachable, silent) count towards ejection; any answer, even an ERROR, ends the run.
      pool.observer = (command, result, seconds, error) => {
        observer?.(command, result, seconds, error);
        if (error instanceof StoreUnavailableError || error instanceof StoreTimeoutError) this.#membership?.recordFailure(name);
        else this.#membership?.recordSuccess(name);
      };
    } else {
      pool.observer = observer;
    }
    return Object.freeze({ name, host, port, pool });
  }
}
