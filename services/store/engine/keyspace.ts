import { randomSeed } from '../../shared/random-seed.ts';
import { MAX_TTL_SECONDS } from '../../protocol/limits.ts';
import { murmur3_32View } from '../../ring/murmur3.ts';
import { viewOf } from '../../shared/byte-views.ts';
import { BucketTable, type TableState } from './bucket-table.ts';
import { type SetOutcome, type StoreEngine, ValueRange } from './engine-api.ts';
import { DROPPED_EMPTY_BUCKET, ExpiryIndex, NOTHING_DUE } from './expiry-index.ts';
import { engineSettings, type KvEngineOptions } from './engine-options.ts';
import { KeyPrefetch } from './key-prefetch.ts';
import { LruList } from './lru-list.ts';
import { FootprintBudget, footprintLimitFor } from './footprint-budget.ts';
import { NewKeyFilter } from './new-key-filter.ts';
import { arenaPageTarget, RecordArena } from './record-arena.ts';
import { SlotArrays } from './slot-arrays.ts';
import { SLOT } from './slot-layout.ts';
import { lruOrderWalk, WalkedSlots, type SnapshotSink, type SnapshotWalk } from './snapshot-walk.ts';

// The store's keyspace: pure (no sockets, no timers, injectable clock), O(1) per command,
// and nothing per key on the JavaScript heap. It owns the slot arrays and composes the
// pieces that work on them: the record arena, the bucket table, the LRU list, the expiry
// index, the footprint budget and the snapshot walk. How they fit, why not a Map of
// strings, what counts as access for LRU and how memory is bounded: docs/architecture.md#the-keyspace.
// KvEngine (kv-engine.ts) adds the same commands on strings.

export type { SetOutcome } from './engine-api.ts';
export { MAX_KEYS, type KvEngineOptions } from './engine-options.ts';
export { INITIAL_SLOTS, SLOT_GROWTH } from './slot-arrays.ts';
export type { SnapshotSink, SnapshotWalk } from './snapshot-walk.ts';
export type { TableState } from './bucket-table.ts';
export { FOOTPRINT_FACTOR } from './footprint-budget.ts';

/** Sweep budget when the caller gives none, in milliseconds of the engine's clock. */
export const DEFAULT_SWEEP_MS = 2;
/** Sweep steps per millisecond of budget, so a frozen or fake clock still bounds a call. */
export const SWEEP_ENTRIES_PER_MS = 10_000;
// The slot fields as this module's own constants, which TurboFan folds (see slot-layout.ts).
const STRIDE_SHIFT = SLOT.STRIDE_SHIFT;
const HASH = SLOT.HASH;
const CHAIN = SLOT.CHAIN;
const META = SLOT.META;
const VLEN = SLOT.VLEN;
const CHUNK = SLOT.CHUNK;
const HAS_TTL = SLOT.HAS_TTL;
const KLEN_MASK = SLOT.KLEN_MASK;
const CLS_SHIFT = SLOT.CLS_SHIFT;
const LRU = SLOT.LRU;

function checkSeconds(seconds: number): void {
  if (!(seconds > 0 && seconds <= MAX_TTL_SECONDS)) {
    throw new RangeError(`ttl must be above 0 and at most ${MAX_TTL_SECONDS} seconds, got ${seconds}`);
  }
}

export class Keyspace implements StoreEngine {
  readonly maxMemoryBytes: number;
  readonly maxKeys: number;
  /** Most bytes the engine's footprint may reach (see footprint-budget.ts). */
  readonly footprintLimitBytes: number;
  readonly #noeviction: boolean;
  readonly #now: () => number;
  readonly #seed = randomSeed();
  readonly #arena: RecordArena;
  readonly #expiry = new ExpiryIndex();
  readonly #table: BucketTable;
  readonly #lru: LruList;

  readonly #slotArrays: SlotArrays;
  /** The slot arrays' fields and expiry times (views that track their buffers, so they are never replaced). */
  readonly #slots: Int32Array;
  readonly #expiresAt: Float64Array;
  readonly #prefetch: KeyPrefetch;

  readonly #budget: FootprintBudget;
  /** The snapshot walk under way, if any. */
  #walk: WalkedSlots | null = null;
  /** Between reserve() and endReserve() (see new-key-filter.ts). */
  #newKeyFilter: NewKeyFilter | null = null;

  #live = 0;
  #usage = 0;
  #evictions = 0;
  /** Of #evictions, those made because the footprint limit, not the cap, was reached. */
  #footprintEvictions = 0;
  #expired = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: KvEngineOptions) {
    const settings = engineSettings(options);
    const { maxMemoryBytes } = settings;
    this.maxKeys = settings.maxKeys;
    this.maxMemoryBytes = maxMemoryBytes;
    this.#noeviction = settings.evictionPolicy === 'noeviction';
    this.#now = settings.now;
    const pageTarget = arenaPageTarget(maxMemoryBytes);
    this.footprintLimitBytes = footprintLimitFor(maxMemoryBytes, pageTarget);
    this.#arena = new RecordArena(this.footprintLimitBytes, { pageTarget, pageSource: settings.pageSource });
    this.#slotArrays = new SlotArrays(settings.maxKeys);
    this.#slots = this.#slotArrays.fields;
    this.#expiresAt = this.#slotArrays.expiresAt;
    this.#table = new BucketTable(this.#slots, this.#now, settings.minBuckets, settings.rehashStepBuckets);
    this.#lru = new LruList(this.#slots, settings.exactLruBelowKeys);
    this.#prefetch = new KeyPrefetch(this.#slots, this.#table, this.#arena);
    this.#budget = new FootprintBudget(this.footprintLimitBytes, this.#arena, this.#slotArrays, this.#table);
  }

  /** Sum of key bytes and value bytes over all keys (expired ones count until removed). */
  get usageBytes(): number {
    return this.#usage;
  }
  /** Keys held, including expired keys not yet removed (as Redis DBSIZE). */
  get keyCount(): number {
    return this.#live;
  }
  /** Keys that have a TTL. */
  get keysWithTtl(): number {
    return this.#expiry.size;
  }
  /** Bytes of the arena pages holding the records (USAGE plus size-class rounding and partial pages). */
  get recordBytes(): number {
    return this.#arena.pageBytes;
  }
  /** Bytes of the arena (pages and owner arrays): what the records cost in memory. */
  get arenaBytes(): number {
    return this.#arena.footprintBytes;
  }
  /** Frees the arena's pages no record uses (RecordArena.releaseSparePages), for a store standing idle; returns the bytes freed. */
  releaseSparePages(): number {
    return this.#arena.releaseSparePages();
  }
  /** What the footprint limit bounds: the arena plus the per-slot and bucket arrays. */
  get footprintBytes(): number {
    return this.#budget.bytes;
  }
  get evictions(): number {
    return this.#evictions;
  }
  /** Evictions made because the footprint limit was reached while USAGE was within the cap. */
  get footprintEvictions(): number {
    return this.#footprintEvictions;
  }
  get expired(): number {
    return this.#expired;
  }
  get hits(): number {
    return this.#hits;
  }
  get misses(): number {
    return this.#misses;
  }
  /** Keys whose expiry the sweep could act on now and has not yet (0 when it keeps up). O(overdue time buckets). */
  get expiryBacklog(): number {
    return this.#expiry.overdue(this.#now());
  }
  /** Whether the expiry index holds something due now: the next sweepExpired call has work. O(1). */
  get expiryDue(): boolean {
    return this.#expiry.hasDue(this.#now());
  }
  get tableState(): TableState {
    return this.#table.state;
  }

  // ------------------------------------------------------------ commands on key bytes
  // The key is buf[ks, ke): 1 to MAX_KEY_BYTES bytes (the protocol parser checks the rules).

  prefetch(buf: Buffer, starts: Int32Array, ends: Int32Array, count: number, found?: Int32Array): void {
    const prefetch = this.#prefetch;
    const hashes = prefetch.hashes;
    const n = Math.min(count, hashes.length);
    for (let i = 0; i < n; i++) hashes[i] = this.#hashOf(buf, starts[i]!, ends[i]!);
    prefetch.load(n, found);
  }

  /**
   * A view of the page holding the key's value bytes, at into.start to into.end; undefined
   * when absent (valid until the engine next changes: see StoreEngine). Counts a hit or
   * miss; touches LRU. `hint`: the slot prefetch() found for this key, or 0; it is used
   * only if it holds the key now, so a stale or wrong one costs a lookup, never an answer.
   */
  getAt(buf: Buffer, ks: number, ke: number, into: ValueRange, hint = 0): DataView | undefined {
    const slot = hint > 0 && this.#holdsKey(hint, buf, ks, ke) ? hint : this.#find(buf, ks, ke, this.#hashOf(buf, ks, ke));
    if (slot === 0 || this.#expiredNow(slot)) {
      this.#misses++;
      return undefined;
    }
    this.#lru.touch(slot, this.#live);
    this.#hits++;
    const c = this.#arena.classes[this.#clsOf(slot)]!;
    const i = this.#get(slot, CHUNK);
    into.start = c.offsetOf(i) + ke - ks;
    into.end = into.start + this.#get(slot, VLEN);
    return c.viewOf(i);
  }

  /**
   * Stores the key with the value bytes buf[vs, ve) (copied: the buffer is not kept).
   * Without ttlSeconds any TTL the key had is cleared. 'out_of_memory' when the entry alone
   * is larger than the cap, or, under noeviction, when it would take usage over the cap or
   * the footprint over its limit; then nothing has changed.
   */
  setAt(buf: Buffer, ks: number, ke: number, vs: number, ve: number, ttlSeconds?: number): SetOutcome {
    if (ttlSeconds !== undefined) checkSeconds(ttlSeconds);
    return this.restoreAt(buf, ks, ke, vs, ve, ttlSeconds === undefined ? undefined : ttlSeconds * 1000);
  }

  /**
   * setAt with the time to live in ms, as a snapshot load gives it (any positive amount,
   * not whole seconds); the protocol's bounds on TTLs are the caller's business.
   */
  restoreAt(buf: Buffer, ks: number, ke: number, vs: number, ve: number, ttlMs?: number): SetOutcome {
    if (ttlMs !== undefined && !(ttlMs > 0)) throw new RangeError(`ttlMs must be above 0, got ${ttlMs}`);
    const klen = ke - ks;
    const vlen = ve - vs;
    const size = klen + vlen;
    const max = this.maxMemoryBytes;
    if (size > max) return 'out_of_memory';
    const h = this.#hashOf(buf, ks, ke);
    let slot = 0;
    const filter = this.#newKeyFilter;
    if (filter === null || filter.mayHold(h)) slot = this.#find(buf, ks, ke, h);
    const arena = this.#arena;
    const cls = arena.classOf(size);
    let now = 0;
    let fresh = true; // the record needs a new chunk (and its key bytes)
    if (slot !== 0) {
      const oldSize = klen + this.#get(slot, VLEN);
      const oldCls = this.#clsOf(slot);
      fresh = cls !== oldCls || cls === arena.large; // else the value is overwritten in place
      if (this.#noeviction) {
        if (this.#usage - oldSize + size > max) return 'out_of_memory';
        // A large record's page goes back whole; a small chunk freed is not counted (it may not free a page).
        if (fresh && this.#budget.over(arena.allocCost(cls, size) - (oldCls === arena.large ? Math.max(1, oldSize) : 0))) return 'out_of_memory';
      }
      if (this.#walk !== null) this.#preserve(slot);
      const oldExpiry = this.#ttlOf(slot);
      if (oldExpiry !== 0) {
        now = this.#now();
        if (oldExpiry <= now) this.#expired++;
        this.#expiry.remove(slot, oldExpiry);
        this.#clearTtl(slot);
      }
      // Out of the LRU list while making room, so it cannot be its own victim.
      this.#lru.unlink(slot);
      this.#usage -= oldSize;
      while (this.#usage + size > max) this.#evictOne();
      if (fresh) {
        this.#freeChunk(slot);
        this.#makeRoom(cls, size, false);
      }
    } else {
      const full = this.#live >= this.maxKeys;
      if (this.#noeviction && (full || this.#usage + size > max || this.#budget.over(this.#budget.growthFor(cls, size, true, this.#live)))) {
        return 'out_of_memory';
      }
      if (full) this.#evictOne();
      while (this.#usage + size > max) this.#evictOne();
      this.#makeRoom(cls, size, true);
      slot = this.#newSlot(h);
    }
    if (fresh) this.#set(slot, CHUNK, arena.alloc(cls, slot, size));
    const c = arena.classes[cls]!;
    const i = this.#get(slot, CHUNK);
    // Key and value side by side in buf (a snapshot record): one copy for the record.
    if (fresh && ke === vs) c.write(i, 0, buf, ks, ve);
    else {
      if (fresh) c.write(i, 0, buf, ks, ke);
      c.write(i, klen, buf, vs, ve);
    }
    this.#set(slot, META, klen | (cls << CLS_SHIFT));
    this.#set(slot, VLEN, vlen);
    if (ttlMs !== undefined) {
      if (now === 0) now = this.#now();
      this.#setTtl(slot, now + ttlMs);
    }
    this.#lru.linkLast(slot);
    this.#usage += size;
    return 'ok';
  }

  /** Removes the key; false when it was absent (or already expired). */
  deleteAt(buf: Buffer, ks: number, ke: number): boolean {
    const slot = this.#find(buf, ks, ke, this.#hashOf(buf, ks, ke));
    if (slot === 0 || this.#expiredNow(slot)) return false;
    this.#remove(slot, false);
    return true;
  }

  /** Sets the key's TTL to `seconds` from now; false when absent. Does not touch LRU. */
  expireAt(buf: Buffer, ks: number, ke: number, seconds: number): boolean {
    checkSeconds(seconds);
    const slot = this.#find(buf, ks, ke, this.#hashOf(buf, ks, ke));
    if (slot === 0) return false;
    const now = this.#now();
    const old = this.#ttlOf(slot);
    if (old !== 0) {
      if (old <= now) {
        this.#remove(slot, true);
        return false;
      }
      this.#expiry.remove(slot, old);
    }
    if (this.#walk !== null) this.#preserve(slot);
    this.#setTtl(slot, now + seconds * 1000);
    return true;
  }

  /** null = not found, -1 = no expiry, else the remaining whole seconds rounded up. Does not touch LRU. */
  ttlAt(buf: Buffer, ks: number, ke: number): number | null {
    const slot = this.#find(buf, ks, ke, this.#hashOf(buf, ks, ke));
    if (slot === 0) return null;
    const expiresAt = this.#ttlOf(slot);
    if (expiresAt === 0) return -1;
    const remainingMs = expiresAt - this.#now();
    if (remainingMs <= 0) {
      this.#remove(slot, true);
      return null;
    }
    // Rounded to the microsecond first, so float noise in clock readings cannot turn a
    // full second into two.
    return Math.max(1, Math.ceil(Math.round(remainingMs * 1000) / 1e6));
  }

  /**
   * Active expiry cycle: removes keys whose TTL has passed, earliest first, and returns how
   * many. Work is bounded by maxWorkMs of the engine's clock and by
   * SWEEP_ENTRIES_PER_MS * maxWorkMs steps (a step removes a key or drops an emptied
   * bucket); what is left waits for the next call.
   */
  sweepExpired(maxWorkMs: number = DEFAULT_SWEEP_MS): number {
    const start = this.#now();
    const maxEntries = Math.max(1, Math.ceil(maxWorkMs * SWEEP_ENTRIES_PER_MS));
    let removed = 0;
    for (let steps = 1; steps <= maxEntries; steps++) {
      const slot = this.#expiry.takeDue(start);
      if (slot === NOTHING_DUE) break;
      if (slot !== DROPPED_EMPTY_BUCKET) {
        if (this.#walk !== null) this.#preserve(slot); // with its TTL, before the flag goes
        this.#clearTtl(slot); // already out of the index
        this.#remove(slot, true);
        removed++;
      }
      if ((steps & 127) === 0 && this.#now() - start >= maxWorkMs) break;
    }
    return removed;
  }

  /**
   * Background step of a hash table resize and of giving dropped tables back, for up to
   * maxWorkMs of the engine's clock (BucketTable.rehashFor). Returns whether either is still under way.
   */
  rehashFor(maxWorkMs: number): boolean {
    return this.#table.rehashFor(maxWorkMs, this.#live);
  }

  /** Bytes of dropped tables not yet given back: held, but no longer part of the footprint. */
  get reapingBytes(): number {
    return this.#table.reapingBytes;
  }

  /**
   * Start-up hint (a snapshot load): makes room now, on an empty engine, for `keys` keys
   * of about `recordBytes` bytes each (key plus value), so the inserts that follow neither
   * grow the slot arrays step by step nor resize the hash table (a rehash while loading
   * moves every key again for nothing). Clamped to the keys that fit (FootprintBudget.keysThatFit);
   * past them the arrays grow as usual. The table does not shrink below its reserved size
   * until endReserve(). Returns the keys room was made for.
   */
  reserve(keys: number, recordBytes: number): number {
    if (this.#live !== 0) throw new Error('reserve is for an empty engine');
    if (!(keys >= 0) || !(recordBytes >= 0)) throw new RangeError(`reserve needs counts of 0 or more, got ${keys} keys of ${recordBytes} bytes`);
    const n = this.#budget.keysThatFit(keys, recordBytes, this.maxKeys, this.maxMemoryBytes);
    if (!(n > 0)) return 0;
    this.#slotArrays.reserve(n + 1); // and the sentinel
    this.#newKeyFilter = new NewKeyFilter(this.#table.reserve(n));
    return n;
  }

  /**
   * Ends what reserve() held: the table may shrink again (a shrink starts now when the
   * keys loaded are few for it), and slot room past the slots in use is given back.
   */
  endReserve(): void {
    this.#newKeyFilter = null;
    this.#slotArrays.trim();
    this.#table.endReserve(this.#live);
  }

  /**
   * Recomputes everything from the structures and throws on the first disagreement (usage,
   * counts, lists, hash chains, arena, cap). O(n): for tests and model checks, never on a hot path.
   */
  verifyInvariants(): void {
    const fail = (what: string): never => {
      throw new Error(`keyspace invariant: ${what}`);
    };
    let usage = 0;
    let withTtl = 0;
    const live = this.#lru.verify(this.#slotArrays.top, fail, (s) => {
      const klen = this.#klenOf(s);
      if (klen === 0) fail(`free slot ${s} in the LRU list`);
      const { page, at } = this.#record(s);
      if (this.#hashOf(page, at, at + klen) !== this.#get(s, HASH)) fail(`slot ${s} has a stale hash`);
      if (this.#find(page, at, at + klen, this.#get(s, HASH)) !== s) fail(`slot ${s} is not found under its key`);
      usage += klen + this.#get(s, VLEN);
      if (this.#ttlOf(s) !== 0) withTtl++;
    });
    const chained = this.#table.verify(this.#live, fail);
    if (live !== this.#live || chained !== live) fail(`counts ${this.#live} keys, LRU list ${live}, chains ${chained}`);
    this.#slotArrays.verify(live, fail);
    if (this.#live > this.maxKeys) fail(`${this.#live} keys, more than maxKeys ${this.maxKeys}`);
    if (usage !== this.#usage) fail(`usage counter ${this.#usage}, recomputed ${usage}`);
    if (usage > this.maxMemoryBytes) fail(`usage ${usage} over the cap ${this.maxMemoryBytes}`);
    if (this.footprintBytes > this.footprintLimitBytes) fail(`footprint ${this.footprintBytes} over its limit ${this.footprintLimitBytes}`);
    const chunks = this.#arena.verify((owner, cls, chunk) => {
      const size = this.#klenOf(owner) + this.#get(owner, VLEN);
      return this.#klenOf(owner) !== 0 && this.#clsOf(owner) === cls && this.#get(owner, CHUNK) === chunk && this.#arena.classOf(size) === cls;
    });
    if (chunks !== live) fail(`arena holds ${chunks} records for ${live} keys`);
    this.#expiry.verify(withTtl, (s) => this.#ttlOf(s));
  }

  // ------------------------------------------------------------ internals

  #get(slot: number, field: number): number {
    return this.#slots[(slot << STRIDE_SHIFT) + field]!;
  }

  #set(slot: number, field: number, value: number): void {
    this.#slots[(slot << STRIDE_SHIFT) + field] = value;
  }

  #klenOf(slot: number): number {
    return this.#get(slot, META) & KLEN_MASK;
  }

  #clsOf(slot: number): number {
    return (this.#get(slot, META) >>> CLS_SHIFT) & 0xff;
  }

  /** The slot's expiry time, 0 when it has no TTL. */
  #ttlOf(slot: number): number {
    return (this.#get(slot, META) & HAS_TTL) === 0 ? 0 : this.#expiresAt[slot]!;
  }

  /** Gives the slot a TTL and indexes it (it must have none). */
  #setTtl(slot: number, expiresAt: number): void {
    this.#set(slot, META, this.#get(slot, META) | HAS_TTL);
    this.#expiresAt[slot] = expiresAt;
    this.#expiry.add(slot, expiresAt);
  }

  /** Clears the flag only: the caller has taken the slot out of the expiry index. */
  #clearTtl(slot: number): void {
    this.#set(slot, META, this.#get(slot, META) & ~HAS_TTL);
  }

  /**
   * MurmurHash3 of the key bytes, seeded per engine, as a signed 32-bit integer (the slots'
   * HASH field holds it so). It reads the key a 4-byte block at a time through a view of the
   * buffer: on a short key the loads, not the multiplies, are the cost, and a hash that
   * reads a byte at a time (FNV-1a) took 34 ns for a 16-byte key where this takes 21
   * (microbenchmark).
   */
  #hashOf(buf: Buffer, start: number, end: number): number {
    return murmur3_32View(viewOf(buf), start, end, this.#seed) | 0;
  }

  /** Whether `slot` is in use and holds the key buf[ks, ke): getAt's check of a hint. */
  #holdsKey(slot: number, buf: Buffer, ks: number, ke: number): boolean {
    return slot < this.#slotArrays.top && this.#keyIs(slot << STRIDE_SHIFT, buf, ks, ke);
  }

  /** The slot holding the key buf[ks, ke) (hash h), or 0. */
  #find(buf: Buffer, ks: number, ke: number, h: number): number {
    const slots = this.#slots;
    let s = this.#table.head(h);
    while (s !== 0) {
      const o = s << STRIDE_SHIFT;
      if (slots[o + HASH] === h && this.#keyIs(o, buf, ks, ke)) return s;
      s = slots[o + CHAIN]!;
    }
    return 0;
  }

  /** Whether the slot at field offset o holds the key buf[ks, ke) (a free slot's key length is 0: never). */
  #keyIs(o: number, buf: Buffer, ks: number, ke: number): boolean {
    const meta = this.#slots[o + META]!;
    return (meta & KLEN_MASK) === ke - ks && this.#arena.classes[(meta >>> CLS_SHIFT) & 0xff]!.startsWith(this.#slots[o + CHUNK]!, viewOf(buf), ks, ke);
  }

  #record(slot: number): { page: Buffer; at: number } {
    const c = this.#arena.classes[this.#clsOf(slot)]!;
    const i = this.#get(slot, CHUNK);
    return { page: c.pageOf(i), at: c.offsetOf(i) };
  }

  /** True (and the key is removed, counted as expired) when the key's TTL has passed. */
  #expiredNow(slot: number): boolean {
    const expiresAt = this.#ttlOf(slot);
    if (expiresAt === 0 || expiresAt > this.#now()) return false;
    this.#remove(slot, true);
    return true;
  }

  /** A fresh slot for hash h, chained into its bucket (the record is the caller's job). */
  #newSlot(h: number): number {
    const slot = this.#slotArrays.take();
    this.#set(slot, HASH, h);
    // A key newer than the snapshot under way is not part of it.
    if (this.#walk !== null) this.#walk.skip(slot);
    this.#live++;
    this.#table.insert(slot, h, this.#live);
    return slot;
  }

  /** Takes a live key out: record freed, slot unchained and put on the free list. */
  #remove(slot: number, expired: boolean): void {
    if (this.#walk !== null) this.#preserve(slot);
    const expiresAt = this.#ttlOf(slot);
    if (expiresAt !== 0) {
      this.#expiry.remove(slot, expiresAt);
      this.#clearTtl(slot);
    }
    this.#usage -= this.#klenOf(slot) + this.#get(slot, VLEN);
    this.#lru.unlink(slot);
    this.#freeChunk(slot);
    this.#table.remove(slot, this.#get(slot, HASH));
    this.#slotArrays.release(slot);
    this.#live--;
    if (expired) this.#expired++;
    this.#table.keysChanged(this.#live);
  }

  /**
   * Under lru, evicts least recently used keys until a record of class `cls` (for a new
   * key when `newKey`) fits under the footprint limit, or no key is left. (Under noeviction
   * the caller has checked that it fits.)
   */
  #makeRoom(cls: number, size: number, newKey: boolean): void {
    if (this.#noeviction) return;
    const budget = this.#budget;
    // Only allocations grow the footprint: when this one adds nothing (most SETs), it stays within the limit.
    if (budget.growthFor(cls, size, newKey, this.#live) === 0) return;
    while (budget.over(budget.growthFor(cls, size, newKey, this.#live)) && this.#lru.oldest !== LRU) {
      if (this.#evictOne()) this.#footprintEvictions++;
    }
  }

  #freeChunk(slot: number): void {
    const cls = this.#clsOf(slot);
    const chunk = this.#get(slot, CHUNK);
    const moved = this.#arena.free(cls, chunk);
    if (moved !== -1) this.#set(moved, CHUNK, chunk);
  }

  /** Removes the least recently used key (counted as expired if its TTL has passed); true when it counted as an eviction. */
  #evictOne(): boolean {
    const victim = this.#lru.oldest;
    if (victim === LRU) throw new Error('keyspace: usage above zero with no keys');
    const expiresAt = this.#ttlOf(victim);
    const expired = expiresAt !== 0 && expiresAt <= this.#now();
    this.#remove(victim, expired);
    if (!expired) this.#evictions++;
    return !expired;
  }

  // ------------------------------------------------------------ snapshots

  /**
   * Starts a point-in-time snapshot (snapshot-walk.ts): `step()` hands the keys to `sink`
   * from the least to the most recently used (the order a load inserts them in, so LRU
   * order comes back), while commands may run between steps; before a command changes or
   * removes a key the walk has not reached, the key's record as it was goes to the sink
   * first. Keys already expired at the start are left out.
   */
  beginSnapshot(sink: SnapshotSink): SnapshotWalk {
    if (this.#walk !== null) throw new Error('a snapshot is already under way');
    const walk = new WalkedSlots(sink, this.#now(), this.#slotArrays.top);
    this.#walk = walk;
    const release = (): void => {
      this.#walk = null;
    };
    return lruOrderWalk(walk, this.#lru, (slot) => this.#preserve(slot), () => this.#walk === walk, release);
  }

  /** Hands the slot's record to the walk's sink unless it was already, or is newer than the walk. */
  #preserve(slot: number): void {
    const walk = this.#walk!;
    if (!walk.claim(slot)) return;
    const expiresAt = this.#ttlOf(slot);
    if (expiresAt !== 0 && expiresAt <= walk.startedAt) return;
    const { page, at } = this.#record(slot);
    const klen = this.#klenOf(slot);
    walk.sink(page, at, at + klen, at + klen, at + klen + this.#get(slot, VLEN), expiresAt);
  }
}
