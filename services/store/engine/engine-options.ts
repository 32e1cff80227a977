// What a KvEngine is made with: its options, their defaults, and the checks on them.
// The module's binding, not the global (a getter looked up on every call): see served-connection.ts.
import { performance } from 'node:perf_hooks';
import { MIN_BUCKETS, powerOfTwoAtLeast, REHASH_STEP_BUCKETS } from './bucket-table.ts';
import { EXACT_LRU_BELOW_KEYS } from './lru-list.ts';
import type { PageSource } from './page-source.ts';

/** Most keys one engine holds: slot numbers times the slot size must stay within int32. */
export const MAX_KEYS = 2 ** 27;

export interface KvEngineOptions {
  maxMemoryBytes: number;
  evictionPolicy: 'lru' | 'noeviction';
  /** Milliseconds, monotonic; default performance.now(). */
  now?: () => number;
  /**
   * Most keys held (default and upper bound MAX_KEYS): past it a new key evicts the least
   * recently used one, or under noeviction gets out_of_memory, as if the cap were reached.
   */
  maxKeys?: number;
  /** Smallest hash table, a power of two (default MIN_BUCKETS); tests use a few buckets to reach resizes with few keys. */
  minBuckets?: number;
  /** Old buckets moved to the new table per insert or removal while the table is resized (default REHASH_STEP_BUCKETS, at least 1). */
  rehashStepBuckets?: number;
  /**
   * Below this many keys every GET moves its key to the most recent end of the LRU list;
   * from it on, a GET leaves a key that is already among the most recent three quarters
   * where it is (default EXACT_LRU_BELOW_KEYS; 0 = always approximate, as the model test runs it).
   */
  exactLruBelowKeys?: number;
  /** Where the record arena's pages are allocated (default this thread's malloc; the store passes a ThreadPageSource: see page-source.ts). */
  pageSource?: PageSource;
}

/** The options with every default filled in. */
export type EngineSettings = Required<Omit<KvEngineOptions, 'pageSource'>> & Pick<KvEngineOptions, 'pageSource'>;

const defaultNow = (): number => performance.now();

/** The options checked (a RangeError names the first that is out of bounds), with their defaults. */
export function engineSettings(options: KvEngineOptions): EngineSettings {
  const {
    maxMemoryBytes,
    evictionPolicy,
    maxKeys = MAX_KEYS,
    now = defaultNow,
    minBuckets = MIN_BUCKETS,
    rehashStepBuckets = REHASH_STEP_BUCKETS,
    exactLruBelowKeys = EXACT_LRU_BELOW_KEYS,
    pageSource,
  } = options;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1 || maxKeys > MAX_KEYS) {
    throw new RangeError(`maxKeys must be an integer from 1 to ${MAX_KEYS}, got ${maxKeys}`);
  }
  if (!Number.isSafeInteger(maxMemoryBytes) || maxMemoryBytes < 0) {
    throw new RangeError(`maxMemoryBytes must be a non-negative integer, got ${maxMemoryBytes}`);
  }
  if (evictionPolicy !== 'lru' && evictionPolicy !== 'noeviction') {
    throw new RangeError(`evictionPolicy must be 'lru' or 'noeviction', got ${String(evictionPolicy)}`);
  }
  if (!Number.isSafeInteger(exactLruBelowKeys) || exactLruBelowKeys < 0) {
    throw new RangeError(`exactLruBelowKeys must be a non-negative integer, got ${exactLruBelowKeys}`);
  }
  if (!Number.isSafeInteger(minBuckets) || minBuckets < 1 || minBuckets > MAX_KEYS || powerOfTwoAtLeast(minBuckets) !== minBuckets) {
    throw new RangeError(`minBuckets must be a power of two from 1 to ${MAX_KEYS}, got ${minBuckets}`);
  }
  if (!Number.isSafeInteger(rehashStepBuckets) || rehashStepBuckets < 1) {
    throw new RangeError(`rehashStepBuckets must be a positive integer, got ${rehashStepBuckets}`);
  }
  return { maxMemoryBytes, evictionPolicy, maxKeys, now, minBuckets, rehashStepBuckets, exactLruBelowKeys, pageSource };
}
