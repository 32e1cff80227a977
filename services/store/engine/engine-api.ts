/**
 * Where a value's bytes are in the page StoreEngine.getAt returns: page[start, end). Valid
 * only until the engine's next write (a SET may move or overwrite the record), so the
 * caller copies or encodes the bytes at once. One instance is reused for every GET. The
 * page is returned rather than kept here: storing it in this long-lived object would run
 * V8's write barrier on every GET while the page is still young (`RecordWrite`, ~1% of
 * the store's CPU at depth 16), which two small integers never do.
 */
export class ValueRange {
  start = 0;
  end = 0;
}

export type SetOutcome = 'ok' | 'out_of_memory';

/** What the store's scrape-time series read from the engine. */
export interface EngineStats {
  readonly usageBytes: number;
  readonly keyCount: number;
  readonly maxMemoryBytes: number;
  readonly evictions: number;
  readonly footprintEvictions: number;
  readonly arenaBytes: number;
  readonly footprintBytes: number;
  readonly footprintLimitBytes: number;
  readonly expired: number;
  readonly hits: number;
  readonly misses: number;
  /** Keys past their expiry that the sweep could remove and has not yet. */
  readonly expiryBacklog: number;
}

/** Most keys one prefetch() call looks ahead at; an engine ignores those past it. */
export const PREFETCH_BATCH = 64;

/**
 * What the store's server needs of a keyspace: commands on key bytes taken straight from
 * the socket's buffer (the key is buf[ks, ke)), values in and out as bytes. The wire
 * format (base64 on GET) is the server's business, not the engine's.
 */
export interface StoreEngine extends EngineStats {
  /**
   * A hint, with no effect on the keyspace or its counters: loads the memory that looking
   * up the keys buf[starts[i], ends[i]) (i < count, at most PREFETCH_BATCH) will touch, all
   * of them at once, so the cache misses of a pipelined batch overlap instead of coming
   * one command at a time. With `found`, sets found[i] to a lookup hint for key i (0 for
   * none), to be handed to getAt.
   */
  prefetch(buf: Buffer, starts: Int32Array, ends: Int32Array, count: number, found?: Int32Array): void;
  /**
   * Finds the key: a view of the memory holding its value, at into.start to into.end;
   * undefined when absent. Counts a hit or miss. The view is for reading the value at once
   * (a GET's reply): the engine's next change may move or free what it shows.
   * `hint`: what prefetch() found for the key, or 0; checked before it is used, so a stale
   * one (the keyspace changed since) only costs the lookup it would have saved.
   */
  getAt(buf: Buffer, ks: number, ke: number, into: ValueRange, hint?: number): DataView | undefined;
  /** Stores the value bytes buf[vs, ve) (copied); without ttlSeconds any TTL is cleared. */
  setAt(buf: Buffer, ks: number, ke: number, vs: number, ve: number, ttlSeconds?: number): SetOutcome;
  /** false when the key was absent. */
  deleteAt(buf: Buffer, ks: number, ke: number): boolean;
  /** false when the key was absent. */
  expireAt(buf: Buffer, ks: number, ke: number, seconds: number): boolean;
  /** null = absent, -1 = no expiry, else whole seconds left, rounded up. */
  ttlAt(buf: Buffer, ks: number, ke: number): number | null;
}
