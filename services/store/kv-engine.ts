import { randomInt } from 'node:crypto';
import { DROPPED_EMPTY_BUCKET, ExpiryIndex, NOTHING_DUE } from './expiry-index.ts';
import { RecordArena } from './record-arena.ts';
import { type SetOutcome, type StoreEngine, ValueLocation } from './store-engine.ts';

// The store's keyspace: pure (no sockets, no timers, injectable clock), O(1) per command,
// and nothing per key on the JavaScript heap.
//
// Layout. Each entry has a slot number; a slot is 8 int32s in one typed array (its key
// hash, its bucket-chain link, its LRU links, key length and size class, value length,
// and its chunk in the arena), so a lookup or an LRU move touches one cache line per slot
// instead of one per field (memory latency is most of a GET's cost); expiry times sit in a
// Float64Array read only for keys whose slot is flagged as having a TTL. The record (key bytes then value
// bytes) lives in the RecordArena's pages. A hash table of slot numbers (separate chaining
// through the per-slot `chain` array, a power-of-two number of buckets, doubled when
// there are more keys than buckets) finds a key from its bytes: commands look keys up
// straight from the socket's buffer, with no string made for the key, and a GET points at
// the value's bytes in the page (the server encodes them). Why not a Map of strings: that costs ~320
// bytes of RSS per 100-byte entry (strings, Map entries and the heap slack the collector
// keeps), this ~170 (bench/engine-memory.ts).
//
// The hash is FNV-1a over the key bytes with a random per-engine seed and a final mix, so
// keys that collide in one process do not collide in the next.
//
// Decided: GET and SET (including overwrites) count as access for LRU; EXPIRE and TTL do
// not (they read or change metadata, as Redis's TTL does), nor do DELETE and the sweep.
// Only GET counts hits and misses. An expired key is never returned: every command checks
// the key it touches, and sweepExpired() removes unread ones through the expiry index.

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
}

export type { SetOutcome } from './store-engine.ts';

/** Sweep budget when the caller gives none, in milliseconds of the engine's clock. */
export const DEFAULT_SWEEP_MS = 2;
/** Sweep steps per millisecond of budget, so a frozen or fake clock still bounds a call. */
export const SWEEP_ENTRIES_PER_MS = 10_000;
/** Largest TTL accepted, in seconds (SPEC: 1 to 10^9; the server validates the syntax). */
export const MAX_TTL_SECONDS = 1e9;
/** Longest key in bytes (SPEC §1); key lengths are held in a byte per slot. */
export const MAX_KEY_BYTES = 250;
/** Most keys one engine holds: slot numbers times the slot size must stay within int32. */
export const MAX_KEYS = 2 ** 27;

// Slot 0 is the sentinel of the LRU list and the "none" of chains and the free list.
const LRU = 0;
const INITIAL_SLOTS = 1024;

// A slot's fields, at (slot << STRIDE_SHIFT) + field in #slots.
const STRIDE_SHIFT = 3;
const HASH = 0;
/** Next slot in the same hash bucket (or in the free list); 0 ends it. */
const CHAIN = 1;
const PREV = 2;
const NEXT = 3;
/** Key length (bits 0-7; 0 marks a free slot), size class (bits 8-15), HAS_TTL. */
const META = 4;
const VLEN = 5;
const CHUNK = 6;
const HAS_TTL = 1 << 16;
const KLEN_MASK = 0xff;
const CLS_SHIFT = 8;

const defaultNow = (): number => performance.now();

function checkSeconds(seconds: number): void {
  if (!(seconds > 0 && seconds <= MAX_TTL_SECONDS)) {
    throw new RangeError(`ttl must be above 0 and at most ${MAX_TTL_SECONDS} seconds, got ${seconds}`);
  }
}

function checkKey(key: Buffer): void {
  if (key.length < 1 || key.length > MAX_KEY_BYTES) {
    throw new RangeError(`key must be 1 to ${MAX_KEY_BYTES} bytes, got ${key.length}`);
  }
}

const grownInt32 = (a: Int32Array, n: number): Int32Array<ArrayBuffer> => {
  const b = new Int32Array(n);
  b.set(a);
  return b;
};

export class KvEngine implements StoreEngine {
  readonly maxMemoryBytes: number;
  readonly maxKeys: number;
  readonly #noeviction: boolean;
  readonly #now: () => number;
  readonly #seed = randomInt(2 ** 32) | 0;
  readonly #arena = new RecordArena();
  readonly #expiry = new ExpiryIndex();

  /** Every slot's fields (HASH ... CHUNK). */
  #slots = new Int32Array(INITIAL_SLOTS << STRIDE_SHIFT);
  /** Absolute expiry on the engine's clock in ms, for slots flagged HAS_TTL. */
  #expiresAt = new Float64Array(INITIAL_SLOTS);
  /** Slots ever used: 1..#top-1 (slot 0 is the sentinel). */
  #top = 1;
  #freeHead = 0;

  /** Bucket → first slot of its chain (0 = empty). */
  #buckets = new Int32Array(INITIAL_SLOTS);
  #bucketMask = INITIAL_SLOTS - 1;

  #live = 0;
  #usage = 0;
  #evictions = 0;
  #expired = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: KvEngineOptions) {
    const { maxMemoryBytes, evictionPolicy, maxKeys = MAX_KEYS } = options;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1 || maxKeys > MAX_KEYS) {
      throw new RangeError(`maxKeys must be an integer from 1 to ${MAX_KEYS}, got ${maxKeys}`);
    }
    this.maxKeys = maxKeys;
    if (!Number.isSafeInteger(maxMemoryBytes) || maxMemoryBytes < 0) {
      throw new RangeError(`maxMemoryBytes must be a non-negative integer, got ${maxMemoryBytes}`);
    }
    if (evictionPolicy !== 'lru' && evictionPolicy !== 'noeviction') {
      throw new RangeError(`evictionPolicy must be 'lru' or 'noeviction', got ${String(evictionPolicy)}`);
    }
    this.maxMemoryBytes = maxMemoryBytes;
    this.#noeviction = evictionPolicy === 'noeviction';
    this.#now = options.now ?? defaultNow;
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
  get evictions(): number {
    return this.#evictions;
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

  // ------------------------------------------------------------ commands on key bytes
  // The key is buf[ks, ke): 1 to MAX_KEY_BYTES bytes (the protocol parser checks the rules).

  /** Points `into` at the key's value bytes; false when absent. Counts a hit or miss; touches LRU. */
  getAt(buf: Buffer, ks: number, ke: number, into: ValueLocation): boolean {
    const slot = this.#find(buf, ks, ke, this.#hashOf(buf, ks, ke));
    if (slot === 0 || this.#expiredNow(slot)) {
      this.#misses++;
      return false;
    }
    this.#touch(slot);
    this.#hits++;
    const c = this.#arena.classes[this.#clsOf(slot)]!;
    const i = this.#get(slot, CHUNK);
    into.page = c.pageOf(i);
    into.start = c.offsetOf(i) + ke - ks;
    into.end = into.start + this.#get(slot, VLEN);
    return true;
  }

  /**
   * Stores the key with the value bytes buf[vs, ve) (copied: the buffer is not kept).
   * Without ttlSeconds any TTL the key had is cleared. 'out_of_memory' when the entry alone
   * is larger than the cap, or, under noeviction, when it would take usage over the cap;
   * then nothing has changed.
   */
  setAt(buf: Buffer, ks: number, ke: number, vs: number, ve: number, ttlSeconds?: number): SetOutcome {
    if (ttlSeconds !== undefined) checkSeconds(ttlSeconds);
    const klen = ke - ks;
    const vlen = ve - vs;
    const size = klen + vlen;
    const max = this.maxMemoryBytes;
    if (size > max) return 'out_of_memory';
    const h = this.#hashOf(buf, ks, ke);
    let slot = this.#find(buf, ks, ke, h);
    const arena = this.#arena;
    const cls = arena.classOf(size);
    let now = 0;
    let fresh = true; // the record needs a new chunk (and its key bytes)
    if (slot !== 0) {
      const oldSize = klen + this.#get(slot, VLEN);
      if (this.#noeviction && this.#usage - oldSize + size > max) return 'out_of_memory';
      const oldExpiry = this.#ttlOf(slot);
      if (oldExpiry !== 0) {
        now = this.#now();
        if (oldExpiry <= now) this.#expired++;
        this.#expiry.remove(slot, oldExpiry);
        this.#clearTtl(slot);
      }
      // Out of the LRU list while making room, so it cannot be its own victim.
      this.#unlink(slot);
      this.#usage -= oldSize;
      while (this.#usage + size > max) this.#evictOne();
      if (cls === this.#clsOf(slot) && cls !== arena.large) {
        fresh = false; // same size class: the value is overwritten in place
      } else {
        this.#freeChunk(slot);
      }
    } else {
      const full = this.#live >= this.maxKeys;
      if (this.#noeviction && (full || this.#usage + size > max)) return 'out_of_memory';
      if (full) this.#evictOne();
      while (this.#usage + size > max) this.#evictOne();
      slot = this.#newSlot(h);
    }
    if (fresh) this.#set(slot, CHUNK, arena.alloc(cls, slot, size));
    const c = arena.classes[cls]!;
    const i = this.#get(slot, CHUNK);
    const page = c.pageOf(i);
    const at = c.offsetOf(i);
    if (fresh) copyBytes(buf, ks, ke, page, at);
    copyBytes(buf, vs, ve, page, at + klen);
    this.#set(slot, META, klen | (cls << CLS_SHIFT));
    this.#set(slot, VLEN, vlen);
    if (ttlSeconds !== undefined) {
      if (now === 0) now = this.#now();
      this.#setTtl(slot, now + ttlSeconds * 1000);
    }
    this.#linkLast(slot);
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

  // ------------------------------------------------------------ the same, on strings
  // For tests, tools and embedding: keys as strings (UTF-8), values as standard base64.

  get(key: string): string | undefined {
    const k = keyBytes(key);
    const at = new ValueLocation();
    return this.getAt(k, 0, k.length, at) ? at.page.toString('base64', at.start, at.end) : undefined;
  }

  /**
   * Stores `valueBase64` (padded standard base64). Throws (changing nothing) on a length
   * that is not a multiple of 4 or characters outside the base64 alphabet.
   */
  set(key: string, valueBase64: string, ttlSeconds?: number): SetOutcome {
    if ((valueBase64.length & 3) !== 0) {
      throw new TypeError('value must be padded standard base64 (length a multiple of 4)');
    }
    const value = Buffer.from(atob(valueBase64), 'latin1'); // atob throws on a bad alphabet
    return this.setBytes(key, value, 0, value.length, ttlSeconds);
  }

  /** `set` with the value bytes buf[start, end). */
  setBytes(key: string, buf: Buffer, start: number, end: number, ttlSeconds?: number): SetOutcome {
    const k = keyBytes(key);
    const line = Buffer.concat([k, buf.subarray(start, end)]);
    return this.setAt(line, 0, k.length, k.length, line.length, ttlSeconds);
  }

  delete(key: string): boolean {
    const k = keyBytes(key);
    return this.deleteAt(k, 0, k.length);
  }

  expire(key: string, seconds: number): boolean {
    const k = keyBytes(key);
    return this.expireAt(k, 0, k.length, seconds);
  }

  ttl(key: string): number | null {
    const k = keyBytes(key);
    return this.ttlAt(k, 0, k.length);
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
        this.#clearTtl(slot); // already out of the index
        this.#remove(slot, true);
        removed++;
      }
      if ((steps & 127) === 0 && this.#now() - start >= maxWorkMs) break;
    }
    return removed;
  }

  /**
   * Recomputes everything from the structures and throws on the first disagreement (usage,
   * counts, lists, hash chains, arena, cap). O(n): for tests and model checks, never on a hot path.
   */
  verifyInvariants(): void {
    const fail = (what: string): never => {
      throw new Error(`kv-engine invariant: ${what}`);
    };
    let usage = 0;
    let withTtl = 0;
    let live = 0;
    for (let s = this.#get(LRU, NEXT); s !== LRU; s = this.#get(s, NEXT)) {
      const next = this.#get(s, NEXT);
      if (this.#get(next, PREV) !== s) fail(`broken LRU links at slot ${s}`);
      if (++live > this.#top) fail('LRU list does not end');
      const klen = this.#klenOf(s);
      if (klen === 0) fail(`free slot ${s} in the LRU list`);
      const { page, at } = this.#record(s);
      if (this.#hashOf(page, at, at + klen) !== this.#get(s, HASH)) fail(`slot ${s} has a stale hash`);
      if (this.#find(page, at, at + klen, this.#get(s, HASH)) !== s) fail(`slot ${s} is not found under its key`);
      usage += klen + this.#get(s, VLEN);
      if (this.#ttlOf(s) !== 0) withTtl++;
    }
    let chained = 0;
    for (let b = 0; b <= this.#bucketMask; b++) {
      for (let s = this.#buckets[b]!; s !== 0; s = this.#get(s, CHAIN)) {
        if (++chained > live) fail('hash chains hold more slots than the LRU list');
        if ((this.#get(s, HASH) & this.#bucketMask) !== b) fail(`slot ${s} chained in the wrong bucket`);
      }
    }
    let free = 0;
    for (let s = this.#freeHead; s !== 0; s = this.#get(s, CHAIN)) {
      if (this.#get(s, META) !== 0) fail(`free slot ${s} is in use`);
      if (++free > this.#top) fail('free list does not end');
    }
    if (live !== this.#live || chained !== live) fail(`counts ${this.#live} keys, LRU list ${live}, chains ${chained}`);
    if (live + free + 1 !== this.#top) fail(`slots leak: ${live} live + ${free} free of ${this.#top - 1}`);
    if (this.#live > this.#bucketMask + 1) fail('more keys than buckets');
    if (this.#live > this.maxKeys) fail(`${this.#live} keys, more than maxKeys ${this.maxKeys}`);
    if (usage !== this.#usage) fail(`usage counter ${this.#usage}, recomputed ${usage}`);
    if (usage > this.maxMemoryBytes) fail(`usage ${usage} over the cap ${this.maxMemoryBytes}`);
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

  #hashOf(buf: Buffer, start: number, end: number): number {
    let h = this.#seed ^ 0x811c9dc5;
    for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
    // murmur3's finalizer: FNV's low bits (the bucket index) depend on every byte after it.
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return h ^ (h >>> 16);
  }

  /** The slot holding the key buf[ks, ke) (hash h), or 0. */
  #find(buf: Buffer, ks: number, ke: number, h: number): number {
    const klen = ke - ks;
    for (let s = this.#buckets[h & this.#bucketMask]!; s !== 0; s = this.#get(s, CHAIN)) {
      if (this.#get(s, HASH) === h && this.#klenOf(s) === klen) {
        const c = this.#arena.classes[this.#clsOf(s)]!;
        const i = this.#get(s, CHUNK);
        const page = c.pageOf(i);
        let at = c.offsetOf(i);
        let k = ks;
        while (k < ke && page[at] === buf[k]) {
          at++;
          k++;
        }
        if (k === ke) return s;
      }
    }
    return 0;
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
    let slot = this.#freeHead;
    if (slot !== 0) {
      this.#freeHead = this.#get(slot, CHAIN);
    } else {
      slot = this.#top++;
      if (slot >= this.#expiresAt.length) this.#growSlots();
    }
    this.#set(slot, HASH, h);
    this.#live++;
    if (this.#live > this.#bucketMask + 1) this.#rehash(); // before chaining: #rehash chains the live slots
    const b = h & this.#bucketMask;
    this.#set(slot, CHAIN, this.#buckets[b]!);
    this.#buckets[b] = slot;
    return slot;
  }

  #growSlots(): void {
    const n = this.#expiresAt.length * 2;
    const slots = new Int32Array(n << STRIDE_SHIFT);
    slots.set(this.#slots);
    this.#slots = slots;
    const expiresAt = new Float64Array(n);
    expiresAt.set(this.#expiresAt);
    this.#expiresAt = expiresAt;
  }

  /** Doubles the buckets and re-chains every live slot (those in the LRU list). */
  #rehash(): void {
    const n = (this.#bucketMask + 1) * 2;
    const buckets = new Int32Array(n);
    const mask = n - 1;
    for (let s = this.#get(LRU, NEXT); s !== LRU; s = this.#get(s, NEXT)) {
      const b = this.#get(s, HASH) & mask;
      this.#set(s, CHAIN, buckets[b]!);
      buckets[b] = s;
    }
    this.#buckets = buckets;
    this.#bucketMask = mask;
  }

  /** Takes a live key out: record freed, slot unchained and put on the free list. */
  #remove(slot: number, expired: boolean): void {
    const expiresAt = this.#ttlOf(slot);
    if (expiresAt !== 0) {
      this.#expiry.remove(slot, expiresAt);
      this.#clearTtl(slot);
    }
    this.#usage -= this.#klenOf(slot) + this.#get(slot, VLEN);
    this.#unlink(slot);
    this.#freeChunk(slot);
    // Out of its bucket's chain.
    const b = this.#get(slot, HASH) & this.#bucketMask;
    let s = this.#buckets[b]!;
    if (s === slot) {
      this.#buckets[b] = this.#get(slot, CHAIN);
    } else {
      while (this.#get(s, CHAIN) !== slot) s = this.#get(s, CHAIN);
      this.#set(s, CHAIN, this.#get(slot, CHAIN));
    }
    this.#set(slot, META, 0);
    this.#set(slot, CHAIN, this.#freeHead);
    this.#freeHead = slot;
    this.#live--;
    if (expired) this.#expired++;
  }

  #freeChunk(slot: number): void {
    const cls = this.#clsOf(slot);
    const chunk = this.#get(slot, CHUNK);
    const moved = this.#arena.free(cls, chunk);
    if (moved !== -1) this.#set(moved, CHUNK, chunk);
  }

  /** Removes the least recently used key (counted as expired if its TTL has passed). */
  #evictOne(): void {
    const victim = this.#get(LRU, NEXT);
    if (victim === LRU) throw new Error('kv-engine: usage above zero with no keys');
    const expiresAt = this.#ttlOf(victim);
    const expired = expiresAt !== 0 && expiresAt <= this.#now();
    this.#remove(victim, expired);
    if (!expired) this.#evictions++;
  }

  #touch(slot: number): void {
    if (this.#get(LRU, PREV) === slot) return; // already the most recent
    this.#unlink(slot);
    this.#linkLast(slot);
  }

  #unlink(slot: number): void {
    const prev = this.#get(slot, PREV);
    const next = this.#get(slot, NEXT);
    this.#set(prev, NEXT, next);
    this.#set(next, PREV, prev);
  }

  /** Links `slot` as the most recently used. */
  #linkLast(slot: number): void {
    const last = this.#get(LRU, PREV);
    this.#set(slot, PREV, last);
    this.#set(slot, NEXT, LRU);
    this.#set(last, NEXT, slot);
    this.#set(LRU, PREV, slot);
  }
}

function keyBytes(key: string): Buffer {
  const k = Buffer.from(key, 'utf8');
  checkKey(k);
  return k;
}

/** src[start, end) → dst at `at`: a loop for short runs (no native call), Buffer#copy for long ones. */
function copyBytes(src: Buffer, start: number, end: number, dst: Buffer, at: number): void {
  if (end - start > 64) {
    src.copy(dst, at, start, end);
    return;
  }
  for (let i = start; i < end; i++) dst[at++] = src[i]!;
}
