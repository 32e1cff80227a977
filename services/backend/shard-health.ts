import { StoreTimeoutError, StoreUnavailableError } from '../client/errors.ts';
import type { Shard, ShardedStore } from '../client/sharded-store.ts';
import type { ShardState } from './backend-metrics.ts';

/** One shard in /healthz (SPEC §6). */
export interface ShardHealth {
  readonly name: string;
  readonly up: boolean;
  /** up, down, or ejected (out of the ring for SHARD_RETRY_MS, whatever its probe says). */
  readonly state: ShardState;
  readonly usage?: number;
  readonly latencyMs?: number;
  readonly error?: string;
}

/** The body of /healthz: ok (every shard answers), degraded (some do), error (none: 503). */
export interface HealthReport {
  readonly status: 'ok' | 'degraded' | 'error';
  /** Bytes held, summed over the shards that answered. */
  readonly usage: number;
  readonly shards: readonly ShardHealth[];
  /** With status error: why the first shard failed (SPEC §3's `error`). */
  readonly error?: string;
}

/** The probe's own time-out (SPEC §3: 1 s), whatever STORE_TIMEOUT_MS is. */
function withProbeTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`${what} did not answer the probe within ${ms} ms`)), ms);
  });
  promise.catch(() => {}); // a late failure after the time-out is already reported
  return Promise.race([promise, timedOut]).finally(() => clearTimeout(timer));
}

/** USAGE over the shard's own pool (never a fresh connection a full store would refuse). */
function probeShard(shard: Shard, timeoutMs: number): Promise<number> {
  return withProbeTimeout(shard.pool.probeUsage(), timeoutMs, `store shard ${shard.name}`);
}

/**
 * Readiness and health over the ring. Ready means able to serve: the pool of at least one
 * shard answers USAGE. One shard down is not unready (it would take every backend out of
 * its load balancer for the keys of one shard); it shows as `degraded` in the report.
 */
export function createHealthChecker(ring: ShardedStore, timeoutMs: number, noShards = 'no store shard') {
  return {
    /** Resolves with the usage of the first shard that answers; rejects when none does. */
    async ready(): Promise<number> {
      if (ring.shards.length === 0) throw new StoreUnavailableError(noShards);
      try {
        return await Promise.any(ring.shards.map((s) => probeShard(s, timeoutMs)));
      } catch (err) {
        throw err instanceof AggregateError ? err.errors[0] : err;
      }
    },

    /** Probes every shard at once. */
    async check(): Promise<HealthReport> {
      const shards = await Promise.all(
        ring.shards.map(async (shard): Promise<ShardHealth> => {
          const started = performance.now();
          const ejected = ring.isEjected(shard.name);
          try {
            const usage = await probeShard(shard, timeoutMs);
            const latencyMs = Math.round((performance.now() - started) * 1000) / 1000;
            return { name: shard.name, up: true, state: ejected ? 'ejected' : 'up', usage, latencyMs };
          } catch (err) {
            return { name: shard.name, up: false, state: ejected ? 'ejected' : 'down', error: err instanceof Error ? err.message : String(err) };
          }
        }),
      );
      const answering = shards.filter((s) => s.up);
      const usage = answering.reduce((sum, s) => sum + s.usage!, 0);
      const status = answering.length === 0 ? 'error' : answering.length === shards.length && shards.every((s) => s.state === 'up') ? 'ok' : 'degraded';
      return status === 'error' ? { status, usage, shards, error: shards[0]?.error ?? noShards } : { status, usage, shards };
    },
  };
}

export type HealthChecker = ReturnType<typeof createHealthChecker>;
