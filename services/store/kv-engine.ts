import { ExpiryIndex, TtlEntry } from './expiry-index.ts';

// The store's keyspace: pure (no sockets, no timers, injectable clock), O(1) per command.
//
// Layout. A Map gives each key a slot number; per-slot arrays hold the key, the value and
// the links of a doubly linked LRU list (prev/next in one Int32Array). A key with a TTL
// stores a TtlEntry (value + expiry) in place of the bare value, so a plain key carries no
// TTL bookkeeping. Key bytes are the key's UTF-8 length and value bytes come from the
// stored string's length, so no size is stored.
//
// Why not the Map's insertion order as the LRU list (delete + re-set on every access)?
// V8's Map leaves a deleted entry in its bucket chain until the table is rehashed, and a
// re-inserted key walks that chain: a key read over and over makes its own chain longer
// with every read, so one hot key costs O(keys) per GET (measured ~50 µs per GET at 1M keys,
// growing until the next rehash). Linked slots make an access touch no Map entry at all.
// For the same reason a removed key stays in the Map as a tombstone for a while (its slot
// is reused if the key comes back, so SET/DELETE of one key in a loop grows no chain);
// the oldest tombstones are dropped once they pass a sixteenth of the live keys.
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
   * How values are held. 'latin1' (default) keeps the value bytes one per character and
   * re-encodes on GET (btoa: ~0.1 µs for 100 bytes, ~2 ms for 1 MB); 'base64' keeps the
   * string SET handed in, so GET returns it as is, for 4/3 of the bytes. Measured with
   * bench/engine-memory.ts, 1M keys of 100 bytes: ~265 B/key resident with 'latin1',
   * ~299 with 'base64'; the target is ~270.
   */
  valueStorage?: 'latin1' | 'base64';
}

export type SetOutcome = 'ok' | 'out_of_memory';

/** Sweep budget when the caller gives none, in milliseconds of the engine's clock. */
export const DEFAULT_SWEEP_MS = 2;
/** Sweep steps per millisecond of budget, so a frozen or fake clock still bounds a call. */
export const SWEEP_ENTRIES_PER_MS = 10_000;
/** Largest TTL accepted, in seconds (SPEC: 1 to 10^9; the server validates the syntax). */
export const MAX_TTL_SECONDS = 1e9;
/** Tombstones kept before the oldest are dropped: this many, or a sixteenth of the live keys. */
export const MIN_TOMBSTONES = 1024;

const tombstoneLimit = (live: number): number => Math.max(MIN_TOMBSTONES, live >> 4);

const DEFAULT_VALUE_STORAGE = 'latin1';

// Slots 0 and 1 are the sentinels of the LRU list and of the tombstone list.
const LRU = 0;
const DEAD = 1;
const NONE = -1;

type Stored = string | TtlEntry;

const defaultNow = (): number => performance.now();

/** Bytes encoded by a padded standard base64 string, from its length and padding. */
function base64Bytes(b64: string): number {
  const n = b64.length;
  if (n === 0) return 0;
  const pad = (b64.charCodeAt(n - 1) === 61 ? 1 : 0) + (b64.charCodeAt(n - 2) === 61 ? 1 : 0);
  return (n >>> 2) * 3 - pad;
}

const keyBytes = (key: string): number => Buffer.byteLength(key, 'utf8');

function checkSeconds(seconds: number): void {
  if (!(seconds > 0 && seconds <= MAX_TTL_SECONDS)) {
    throw new RangeError(`ttl must be above 0 and at most ${MAX_TTL_SECONDS} seconds, got ${seconds}`);
  }
}

export class KvEngine {
  readonly maxMemoryBytes: number;
  readonly #noeviction: boolean;
  readonly #latin1: boolean;
  readonly #now: () => number;

  readonly #index = new Map<string, number>();
  /** Slot → key ('' for sentinels and free slots). */
  readonly #keys: string[] = ['', ''];
  /** Slot → stored value; null for sentinels, tombstones and free slots. */
  readonly #vals: (Stored | null)[] = [null, null];
  /** prev of slot s at 2s, next at 2s + 1; the free list is chained through next. */
  #links = new Int32Array(2048);
  #freeHead = NONE;
  readonly #expiry = new ExpiryIndex();

  #live = 0;
  #dead = 0;
  #usage = 0;
  #evictions = 0;
  #expired = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: KvEngineOptions) {
    const { maxMemoryBytes, evictionPolicy, valueStorage = DEFAULT_VALUE_STORAGE } = options;
    if (!Number.isSafeInteger(maxMemoryBytes) || maxMemoryBytes < 0) {
      throw new RangeError(`maxMemoryBytes must be a non-negative integer, got ${maxMemoryBytes}`);
    }
    if (evictionPolicy !== 'lru' && evictionPolicy !== 'noeviction') {
      throw new RangeError(`evictionPolicy must be 'lru' or 'noeviction', got ${String(evictionPolicy)}`);
    }
    if (valueStorage !== 'latin1' && valueStorage !== 'base64') {
      throw new RangeError(`valueStorage must be 'latin1' or 'base64', got ${String(valueStorage)}`);
    }
    this.maxMemoryBytes = maxMemoryBytes;
    this.#noeviction = evictionPolicy === 'noeviction';
    this.#latin1 = valueStorage === 'latin1';
    this.#now = options.now ?? defaultNow;
    const links = this.#links;
    links[2 * LRU] = links[2 * LRU + 1] = LRU;
    links[2 * DEAD] = links[2 * DEAD + 1] = DEAD;
  }

  /** Sum of key UTF-8 bytes and value bytes over all keys (expired ones count until removed). */
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

  /** The stored value as standard base64, or undefined. Counts a hit or miss; touches LRU. */
  get(key: string): string | undefined {
    const slot = this.#index.get(key);
    const stored = slot === undefined ? null : this.#vals[slot]!;
    if (stored === null) {
      this.#misses++;
      return undefined;
    }
    let value: string;
    if (typeof stored === 'string') {
      value = stored;
    } else {
      if (stored.expiresAt <= this.#now()) {
        this.#remove(slot!, true);
        this.#misses++;
        return undefined;
      }
      value = stored.value;
    }
    this.#touch(slot!);
    this.#hits++;
    return this.#latin1 ? btoa(value) : value;
  }

  /**
   * Stores `valueBase64` (padded standard base64, as Buffer#toString('base64') makes it).
   * Without ttlSeconds any TTL the key had is cleared. 'out_of_memory' when the entry alone
   * is larger than the cap, or, under noeviction, when it would take usage over the cap;
   * then nothing has changed. Throws (changing nothing) on a length that is not a multiple
   * of 4, and with latin1 storage on characters outside the base64 alphabet.
   */
  set(key: string, valueBase64: string, ttlSeconds?: number): SetOutcome {
    if ((valueBase64.length & 3) !== 0) {
      throw new TypeError('value must be padded standard base64 (length a multiple of 4)');
    }
    if (ttlSeconds !== undefined) checkSeconds(ttlSeconds);
    // Decode first: a malformed value throws here, before anything has changed.
    return this.#store(key, this.#latin1 ? atob(valueBase64) : valueBase64, ttlSeconds);
  }

  /**
   * `set` for the value bytes buf[start, end) as they came off the socket: converted once,
   * straight to the stored form (a fresh string, so the socket chunk is not pinned).
   */
  setBytes(key: string, buf: Buffer, start: number, end: number, ttlSeconds?: number): SetOutcome {
    if (ttlSeconds !== undefined) checkSeconds(ttlSeconds);
    return this.#store(key, buf.toString(this.#latin1 ? 'latin1' : 'base64', start, end), ttlSeconds);
  }

  /** `value` is in the stored form (latin1 bytes or base64, per valueStorage). */
  #store(key: string, value: string, ttlSeconds: number | undefined): SetOutcome {
    const kBytes = keyBytes(key);
    const size = kBytes + (this.#latin1 ? value.length : base64Bytes(value));
    const max = this.maxMemoryBytes;
    if (size > max) return 'out_of_memory';
    let slot = this.#index.get(key);
    const old = slot === undefined ? null : this.#vals[slot]!;
    const oldSize = old === null ? 0 : kBytes + this.#valueBytes(old);
    if (this.#noeviction && this.#usage - oldSize + size > max) return 'out_of_memory';

    let now: number | undefined;
    if (old !== null) {
      // Replace in place: out of the LRU list (so it cannot be its own victim) and the index.
      if (typeof old !== 'string') {
        now = this.#now();
        if (old.expiresAt <= now) this.#expired++;
        this.#expiry.remove(old);
      }
      this.#unlink(slot!);
      this.#usage -= oldSize;
    } else if (slot !== undefined) {
      this.#unlink(slot); // a tombstone comes back to life in its old slot
      this.#dead--;
      this.#live++;
    }
    while (this.#usage + size > max) this.#evictOne();
    if (slot === undefined) {
      slot = this.#allocate(key);
      this.#index.set(key, slot);
      this.#live++;
    }

    if (ttlSeconds === undefined) {
      this.#vals[slot] = value;
    } else {
      now ??= this.#now();
      const entry = new TtlEntry(slot, value, now + ttlSeconds * 1000);
      this.#expiry.add(entry);
      this.#vals[slot] = entry;
    }
    this.#linkBefore(slot, LRU);
    this.#usage += size;
    return 'ok';
  }

  /** Removes the key; false when it was absent (or already expired). */
  delete(key: string): boolean {
    const slot = this.#index.get(key);
    const stored = slot === undefined ? null : this.#vals[slot]!;
    if (stored === null) return false;
    const expired = typeof stored !== 'string' && stored.expiresAt <= this.#now();
    this.#remove(slot!, expired);
    return !expired;
  }

  /** Sets the key's TTL to `seconds` from now; false when absent. Does not touch LRU. */
  expire(key: string, seconds: number): boolean {
    checkSeconds(seconds);
    const slot = this.#index.get(key);
    const stored = slot === undefined ? null : this.#vals[slot]!;
    if (stored === null) return false;
    const now = this.#now();
    if (typeof stored === 'string') {
      const entry = new TtlEntry(slot!, stored, now + seconds * 1000);
      this.#expiry.add(entry);
      this.#vals[slot!] = entry;
      return true;
    }
    if (stored.expiresAt <= now) {
      this.#remove(slot!, true);
      return false;
    }
    this.#expiry.remove(stored);
    stored.expiresAt = now + seconds * 1000;
    this.#expiry.add(stored);
    return true;
  }

  /** null = not found, -1 = no expiry, else the remaining whole seconds rounded up. Does not touch LRU. */
  ttl(key: string): number | null {
    const slot = this.#index.get(key);
    const stored = slot === undefined ? null : this.#vals[slot]!;
    if (stored === null) return null;
    if (typeof stored === 'string') return -1;
    const remainingMs = stored.expiresAt - this.#now();
    if (remainingMs <= 0) {
      this.#remove(slot!, true);
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
      const entry = this.#expiry.takeDue(start);
      if (entry === undefined) break;
      if (entry !== null) {
        this.#remove(entry.slot, true);
        removed++;
      }
      if ((steps & 127) === 0 && this.#now() - start >= maxWorkMs) break;
    }
    return removed;
  }

  /**
   * Recomputes everything from the structures and throws on the first disagreement (usage,
   * counts, lists, index, cap). O(n): for tests and model checks, never on a hot path.
   */
  verifyInvariants(): void {
    const fail = (what: string): never => {
      throw new Error(`kv-engine invariant: ${what}`);
    };
    const links = this.#links;
    const walk = (sentinel: number, check: (slot: number) => void): number => {
      let count = 0;
      for (let s = links[2 * sentinel + 1]!; s !== sentinel; s = links[2 * s + 1]!) {
        if (links[2 * links[2 * s + 1]!] !== s) fail(`broken links at slot ${s}`);
        if (++count > this.#keys.length) fail('list does not end');
        check(s);
      }
      return count;
    };
    let usage = 0;
    let withTtl = 0;
    const live = walk(LRU, (s) => {
      const key = this.#keys[s]!;
      const stored = this.#vals[s];
      if (stored === null || stored === undefined) return fail(`slot ${s} in the LRU list holds no value`);
      if (this.#index.get(key) !== s) fail(`slot ${s} is not indexed under its key`);
      usage += keyBytes(key) + this.#valueBytes(stored);
      if (typeof stored !== 'string') {
        withTtl++;
        if (stored.slot !== s || stored.bucket === null) fail(`TTL entry of slot ${s} not indexed`);
      }
    });
    const dead = walk(DEAD, (s) => {
      if (this.#vals[s] !== null) fail(`tombstone slot ${s} holds a value`);
      if (this.#index.get(this.#keys[s]!) !== s) fail(`tombstone slot ${s} is not indexed`);
    });
    let free = 0;
    for (let s = this.#freeHead; s !== NONE; s = links[2 * s + 1]!) {
      if (this.#vals[s] !== null || this.#keys[s] !== '') fail(`free slot ${s} is in use`);
      if (++free > this.#keys.length) fail('free list does not end');
    }
    if (live !== this.#live || dead !== this.#dead) fail(`counts ${this.#live}/${this.#dead}, lists ${live}/${dead}`);
    if (live + dead !== this.#index.size) fail(`index holds ${this.#index.size}, lists ${live + dead}`);
    if (live + dead + free + 2 !== this.#keys.length) fail('slots leak');
    if (dead > tombstoneLimit(live)) fail(`${dead} tombstones kept`);
    if (usage !== this.#usage) fail(`usage counter ${this.#usage}, recomputed ${usage}`);
    if (usage > this.maxMemoryBytes) fail(`usage ${usage} over the cap ${this.maxMemoryBytes}`);
    this.#expiry.verify(withTtl);
  }

  #valueBytes(stored: Stored): number {
    const value = typeof stored === 'string' ? stored : stored.value;
    return this.#latin1 ? value.length : base64Bytes(value);
  }

  /** Takes a live key out: its value goes, its key stays as the newest tombstone. */
  #remove(slot: number, expired: boolean): void {
    const stored = this.#vals[slot]!;
    if (typeof stored !== 'string') this.#expiry.remove(stored);
    this.#usage -= keyBytes(this.#keys[slot]!) + this.#valueBytes(stored);
    this.#vals[slot] = null;
    this.#unlink(slot);
    this.#linkBefore(slot, DEAD);
    this.#live--;
    this.#dead++;
    if (expired) this.#expired++;
    // Drop the oldest tombstones; each removal adds one, so this is O(1) amortized.
    const keep = tombstoneLimit(this.#live);
    while (this.#dead > keep) {
      const oldest = this.#links[2 * DEAD + 1]!;
      this.#unlink(oldest);
      this.#index.delete(this.#keys[oldest]!);
      this.#keys[oldest] = '';
      this.#links[2 * oldest + 1] = this.#freeHead;
      this.#freeHead = oldest;
      this.#dead--;
    }
  }

  /** Removes the least recently used key (counted as expired if its TTL has passed). */
  #evictOne(): void {
    const victim = this.#links[2 * LRU + 1]!;
    if (victim === LRU) throw new Error('kv-engine: usage above zero with no keys');
    const stored = this.#vals[victim]!;
    const expired = typeof stored !== 'string' && stored.expiresAt <= this.#now();
    this.#remove(victim, expired);
    if (!expired) this.#evictions++;
  }

  #touch(slot: number): void {
    if (this.#links[2 * LRU] === slot) return; // already the most recent
    this.#unlink(slot);
    this.#linkBefore(slot, LRU);
  }

  #unlink(slot: number): void {
    const links = this.#links;
    const prev = links[2 * slot]!;
    const next = links[2 * slot + 1]!;
    links[2 * prev + 1] = next;
    links[2 * next] = prev;
  }

  /** Links `slot` as the last element of the list whose sentinel is `sentinel`. */
  #linkBefore(slot: number, sentinel: number): void {
    const links = this.#links;
    const last = links[2 * sentinel]!;
    links[2 * slot] = last;
    links[2 * slot + 1] = sentinel;
    links[2 * last + 1] = slot;
    links[2 * sentinel] = slot;
  }

  #allocate(key: string): number {
    let slot = this.#freeHead;
    if (slot !== NONE) {
      this.#freeHead = this.#links[2 * slot + 1]!;
      this.#keys[slot] = key;
      return slot;
    }
    slot = this.#keys.length;
    this.#keys.push(key);
    this.#vals.push(null);
    if (2 * slot + 2 > this.#links.length) {
      const grown = new Int32Array(this.#links.length * 2);
      grown.set(this.#links);
      this.#links = grown;
    }
    return slot;
  }
}
