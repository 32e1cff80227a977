import { RingHolder } from './ring-holder.ts';
import { ShardRing, type RingMember } from './shard-ring.ts';

export interface RingMembershipOptions<M extends RingMember> {
  readonly members: readonly M[];
  /** SHARD_EJECT_AFTER: consecutive failures that eject a shard; 0 = never. */
  readonly ejectAfter: number;
  /** SHARD_RETRY_MS: how long an ejected shard stays out of the ring. */
  readonly retryMs: number;
  /** Called after every swap of the ring in use (for logs and metrics). */
  readonly onChange?: (change: RingChange<M>) => void;
}

export type RingChange<M extends RingMember> =
  | { readonly kind: 'ejected' | 'readmitted'; readonly member: M; readonly ring: ShardRing<M> }
  | { readonly kind: 'members'; readonly ring: ShardRing<M> };

interface ShardState {
  failures: number;
  /** The readmission timer while the shard is ejected. */
  retry: NodeJS.Timeout | undefined;
}

/**
 * The configured shards, which of them are ejected, and the ring in use: the configured
 * ring without the ejected shards. Rendezvous hashing makes that ring route every key of
 * a shard still in it exactly as the full ring does, so an ejection moves only the
 * ejected shard's keys, each to its next choice, and a readmission moves them back.
 *
 * At least one shard always stays in the ring: with every shard failing, ejecting the
 * last would leave nothing to route to, and its keys fail either way.
 */
export class RingMembership<M extends RingMember = RingMember> {
  readonly holder: RingHolder<M>;
  readonly #options: RingMembershipOptions<M>;
  #configured: ShardRing<M>;
  readonly #states = new Map<string, ShardState>();
  #closed = false;

  constructor(options: RingMembershipOptions<M>) {
    this.#options = options;
    this.#configured = new ShardRing(options.members);
    for (const m of options.members) this.#states.set(m.name, { failures: 0, retry: undefined });
    this.holder = new RingHolder(this.#configured);
  }

  /** The ring to route on now. */
  get ring(): ShardRing<M> {
    return this.holder.ring;
  }

  /** Every configured shard, ejected or not. */
  get members(): readonly M[] {
    return this.#configured.members;
  }

  isEjected(name: string): boolean {
    return this.#states.get(name)?.retry !== undefined;
  }

  /** A command on the shard succeeded: its run of failures ends. */
  recordSuccess(name: string): void {
    const state = this.#states.get(name);
    if (state) state.failures = 0;
  }

  /** A command on the shard failed for a transport reason; may eject it. */
  recordFailure(name: string): void {
    const state = this.#states.get(name);
    if (!state || state.retry !== undefined || this.#closed) return;
    state.failures++;
    const { ejectAfter, retryMs } = this.#options;
    if (ejectAfter === 0 || state.failures < ejectAfter || this.ring.size === 1) return;
    state.retry = setTimeout(() => this.#readmit(name), retryMs);
    state.retry.unref();
    this.#rebuild({ kind: 'ejected', name });
  }

  /**
   * A new configured membership while serving (BackendService.setShards): shards that
   * stay keep their state, new ones start with none, gone ones are forgotten.
   */
  setMembers(members: readonly M[]): void {
    const next = new ShardRing(members);
    const names = new Set(members.map((m) => m.name));
    for (const [name, state] of this.#states) {
      if (!names.has(name)) {
        clearTimeout(state.retry);
        this.#states.delete(name);
      }
    }
    for (const m of members) if (!this.#states.has(m.name)) this.#states.set(m.name, { failures: 0, retry: undefined });
    this.#configured = next;
    this.#rebuild({ kind: 'members' });
  }

  /** Cancels the readmission timers; the ring in use stays as it is. */
  close(): void {
    this.#closed = true;
    for (const state of this.#states.values()) clearTimeout(state.retry);
  }

  #readmit(name: string): void {
    const state = this.#states.get(name);
    if (!state || this.#closed) return;
    state.retry = undefined;
    state.failures = 0;
    this.#rebuild({ kind: 'readmitted', name });
  }

  #rebuild(cause: { kind: 'ejected' | 'readmitted'; name: string } | { kind: 'members' }): void {
    const ejected = new Set<string>();
    for (const [name, state] of this.#states) if (state.retry !== undefined) ejected.add(name);
    const live = this.#configured.members.filter((m) => !ejected.has(m.name));
    // A membership change that left only ejected shards routes to them anyway.
    const ring = live.length === this.#configured.size || live.length === 0 ? this.#configured : new ShardRing(live);
    this.holder.swap(ring);
    const onChange = this.#options.onChange;
    if (!onChange) return;
    if (cause.kind === 'members') onChange({ kind: 'members', ring });
    else onChange({ kind: cause.kind, member: this.#configured.member(cause.name)!, ring });
  }
}
