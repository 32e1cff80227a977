import type { StoreDiscovery } from '../config/store-list.ts';
import { DiscoveryError, type ShardResolver } from './shard-resolver.ts';
import type { ShardAddress } from './sharded-store.ts';

/** A discovered member and the addresses its host had at this refresh (SRV targets only). */
export interface DiscoveredShard extends ShardAddress {
  /** The target's addresses now; undefined when the member is an address itself or its lookup failed. */
  readonly addresses?: readonly string[];
}

export interface ShardDiscoveryOptions {
  readonly source: StoreDiscovery;
  readonly resolver: ShardResolver;
  /** KV_STORE_REFRESH_MS. */
  readonly refreshMs: number;
  /** The members changed (and the first time they are found). */
  readonly onMembers: (members: readonly DiscoveredShard[]) => void;
  /** Every refresh that found members, changed or not (the addresses of each target, looked up again). */
  readonly onRefresh?: (members: readonly DiscoveredShard[]) => void;
  /** A refresh failed, timed out or found nothing; `first` is true for the first of a run of failures. */
  readonly onFailure?: (err: DiscoveryError, first: boolean) => void;
  /** The first success after a run of failures. */
  readonly onRecovered?: (failures: number) => void;
}

export interface ShardDiscovery {
  /** The members of the last lookup that found any; empty until one has. */
  readonly members: readonly DiscoveredShard[];
  /** Failed lookups since start-up (kvbackend_store_discovery_failures_total). */
  readonly failures: number;
  /** When a lookup last found members, in ms since the epoch; undefined until one has. */
  readonly lastSuccessMs: number | undefined;
  /** Resolves once a lookup has found members (at once if one has). */
  readonly found: Promise<void>;
  /** Stops the timer, cancels the lookup in flight and waits for it. */
  close(): Promise<void>;
}

/** Same members: the same names at the same ports and hosts. */
function sameMembers(a: readonly ShardAddress[], b: readonly ShardAddress[]): boolean {
  return a.length === b.length && a.every((m, i) => m.name === b[i]!.name && m.host === b[i]!.host && m.port === b[i]!.port);
}

/**
 * Looks the entry up now and then every refreshMs (Node's SRV answers carry no TTL, so
 * discovery polls). Lookups never overlap; the timer does not keep the process alive. A
 * failed, timed-out or empty lookup keeps the members of the last one that found any.
 * With SRV, each refresh also looks up every target's addresses, so a shard whose pod
 * came back at another address is noticed by the refresh as well as by its next connect.
 */
export function startShardDiscovery(options: ShardDiscoveryOptions): ShardDiscovery {
  const { source, resolver, refreshMs } = options;
  let members: readonly DiscoveredShard[] = [];
  let failures = 0;
  let failing = 0; // failures in the current run
  let lastSuccessMs: number | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let markFound!: () => void;
  const found = new Promise<void>((resolve) => (markFound = resolve));

  const lookup = async (): Promise<DiscoveredShard[]> => {
    const listed = await resolver.members(source);
    if (source.kind === 'dns') return listed;
    return Promise.all(
      listed.map(async (m): Promise<DiscoveredShard> => {
        try {
          return { ...m, addresses: await resolver.addresses(m.host) };
        } catch {
          return m; // a target that does not resolve now stays a member; its pool retries
        }
      }),
    );
  };

  const run = (): void => {
    timer = undefined;
    inFlight = lookup().then(
      (next) => {
        if (closed) return;
        const changed = !sameMembers(members, next);
        // Members the ring refuses (two names that hash alike) count as a failed lookup.
        if (changed) options.onMembers(next);
        members = Object.freeze(next);
        lastSuccessMs = Date.now();
        if (failing > 0) options.onRecovered?.(failing);
        failing = 0;
        options.onRefresh?.(members);
        markFound();
      },
    ).catch(
      (err: unknown) => {
        if (closed) return;
        failures++;
        failing++;
        const failure = err instanceof DiscoveryError ? err : new DiscoveryError(String(err), 'failed');
        options.onFailure?.(failure, failing === 1);
      },
    ).then(() => {
      inFlight = undefined;
      if (closed) return;
      timer = setTimeout(run, refreshMs);
      timer.unref();
    });
  };
  run();

  return {
    get members() {
      return members;
    },
    get failures() {
      return failures;
    },
    get lastSuccessMs() {
      return lastSuccessMs;
    },
    found,
    async close() {
      closed = true;
      clearTimeout(timer);
      resolver.cancel();
      await inFlight;
    },
  };
}
