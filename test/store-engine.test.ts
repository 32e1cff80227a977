import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MIN_BUCKETS, REAP_STEP_BYTES, REHASH_BUCKETS_PER_MS } from '../services/store/engine/bucket-table.ts';
import { KvEngine, SLOT_GROWTH, SWEEP_ENTRIES_PER_MS, type KvEngineOptions } from '../services/store/engine/kv-engine.ts';
import { BUCKET_MS } from '../services/store/engine/expiry-index.ts';
import { NewKeyFilter } from '../services/store/engine/new-key-filter.ts';
import { newEngine } from './helpers/new-engine.ts';
import { b64 } from './helpers/base64.ts';

// The engine is pure: every test drives it with a fake clock and never sleeps.

function fakeClock(start = 0) {
  const clock = { t: start, now: () => clock.t, advance: (ms: number) => void (clock.t += ms) };
  return clock;
}

function engineWith(options: Partial<KvEngineOptions> = {}) {
  const clock = fakeClock();
  // Through newEngine: the model-based properties below make thousands (see there).
  const engine = newEngine({ maxMemoryBytes: 1 << 20, evictionPolicy: 'lru', now: clock.now, ...options });
  return { engine, clock };
}

const entryBytes = (key: string, value: string | Uint8Array): number =>
  Buffer.byteLength(key, 'utf8') + Buffer.from(value).length;

describe('get, set, delete', () => {
  it('stores, overwrites and deletes', () => {
    const { engine } = engineWith();
    expect(engine.get('a')).toBeUndefined();
    expect(engine.set('a', b64('one'))).toBe('ok');
    expect(engine.get('a')).toBe(b64('one'));
    expect(engine.set('a', b64('two!'))).toBe('ok');
    expect(engine.get('a')).toBe(b64('two!'));
    expect(engine.keyCount).toBe(1);
    expect(engine.delete('a')).toBe(true);
    expect(engine.delete('a')).toBe(false);
    expect(engine.get('a')).toBeUndefined();
    expect(engine.keyCount).toBe(0);
    expect(engine.usageBytes).toBe(0);
    expect(engine.hits).toBe(2);
    expect(engine.misses).toBe(2);
  });

  it('keeps an empty value as an empty string, not as absent', () => {
    const { engine } = engineWith();
    expect(engine.set('empty', '')).toBe('ok');
    expect(engine.get('empty')).toBe('');
    expect(engine.usageBytes).toBe(5);
    expect(engine.ttl('empty')).toBe(-1);
  });

  it('rejects what the server must never hand in', () => {
    expect(() => new KvEngine({ maxMemoryBytes: -1, evictionPolicy: 'lru' })).toThrow(RangeError);
    expect(() => new KvEngine({ maxMemoryBytes: 10, evictionPolicy: 'fifo' as 'lru' })).toThrow(RangeError);
    const { engine } = engineWith();
    expect(() => engine.set('k', 'abc')).toThrow(TypeError); // unpadded base64
    expect(() => engine.set('k', 'ab!=')).toThrow(); // not base64
    expect(() => engine.set('', b64('v'))).toThrow(RangeError); // keys are 1 to 250 bytes
    expect(() => engine.get('k'.repeat(251))).toThrow(RangeError);
    expect(() => engine.set('k', b64('v'), 0)).toThrow(RangeError);
    expect(() => engine.expire('k', Number.NaN)).toThrow(RangeError);
    expect(engine.keyCount).toBe(0);
  });
});

describe('usage accounting', () => {
  // Keys of 1 to 4 bytes per character; values of 3, 4 and 5 bytes encode with 0, 2 and 1
  // padding characters.
  const keys = ['plain', 'ключ', '鍵', '🔑x', 'é'];
  const values = [Buffer.from([1, 2, 3]), Buffer.from('€a'), Buffer.from('ab€'), Buffer.alloc(0)];

  it('derives value bytes from base64 padding', () => {
    expect(values.map((v) => b64(v).match(/=*$/)![0].length)).toEqual([0, 2, 1, 0]);
    const { engine } = engineWith();
    let expected = 0;
    keys.forEach((key, i) => {
      const value = values[i % values.length]!;
      engine.set(key, b64(value));
      expected += entryBytes(key, value);
      expect(engine.usageBytes).toBe(expected);
    });
  });

  it('setBytes stores bytes taken from inside a larger buffer exactly as set does with their base64', () => {
    const { engine } = engineWith();
    const raw = Buffer.from([0x53, 0x45, 0x54, 0x20, 0x00, 0xff, 0x20, 0x0d, 0xe2, 0x82, 0xac, 0x0a]);
    expect(engine.setBytes('a', raw, 4, 11)).toBe('ok');
    expect(engine.set('b', b64(raw.subarray(4, 11)))).toBe('ok');
    expect(engine.get('a')).toBe(b64(raw.subarray(4, 11)));
    expect(engine.get('a')).toBe(engine.get('b'));
    expect(engine.setBytes('empty', raw, 3, 3, 10)).toBe('ok');
    expect(engine.get('empty')).toBe('');
    expect(engine.ttl('empty')).toBe(10);
    expect(engine.usageBytes).toBe(entryBytes('a', raw.subarray(4, 11)) * 2 + 'empty'.length);
  });

  it('stays exact through set, overwrite, delete, expire and evict', () => {
    const { engine, clock } = engineWith({ maxMemoryBytes: 40 });
    const live = new Map<string, number>();
    const sum = () => [...live.values()].reduce((a, b) => a + b, 0);
    const put = (key: string, value: Uint8Array, ttl?: number) => {
      expect(engine.set(key, b64(value), ttl)).toBe('ok');
      live.set(key, entryBytes(key, value));
    };

    put('ключ', values[0]!); // 8 + 3
    put('鍵', values[1]!, 5); // 3 + 4
    put('🔑x', values[2]!); // 5 + 5
    expect(engine.usageBytes).toBe(sum());
    put('ключ', values[2]!); // overwrite, grows by 2
    put('鍵', values[0]!); // overwrite, shrinks by 1, clears the TTL
    expect(engine.usageBytes).toBe(sum());

    expect(engine.delete('🔑x')).toBe(true);
    live.delete('🔑x');
    expect(engine.usageBytes).toBe(sum());

    put('é', values[1]!, 1); // 2 + 4
    clock.advance(1000);
    expect(engine.get('é')).toBeUndefined(); // lazy expiry
    live.delete('é');
    expect(engine.usageBytes).toBe(sum());

    // 10 + 7 held; a 30-byte entry makes room by evicting the LRU key ('ключ').
    const big = Buffer.alloc(26, 7);
    put('big!', big);
    live.delete('ключ');
    expect(engine.evictions).toBe(1);
    expect(engine.usageBytes).toBe(sum());
    expect(engine.usageBytes).toBeLessThanOrEqual(40);
    engine.verifyInvariants();
  });
});

describe('LRU eviction', () => {
  // Every entry is 1 key byte + 3 value bytes; the cap holds exactly three.
  const three = () => engineWith({ maxMemoryBytes: 12 });
  const v = b64('xyz');

  it('evicts the least recently set key', () => {
    const { engine } = three();
    for (const key of ['a', 'b', 'c', 'd']) expect(engine.set(key, v)).toBe('ok');
    expect(engine.get('a')).toBeUndefined();
    expect(engine.evictions).toBe(1);
    expect(engine.keyCount).toBe(3);
    expect(engine.usageBytes).toBe(12);
  });

  it('a GET makes the key recent, so the victim changes', () => {
    const { engine } = three();
    for (const key of ['a', 'b', 'c']) engine.set(key, v);
    engine.get('a');
    engine.set('d', v);
    expect(engine.get('b')).toBeUndefined();
    expect(engine.get('a')).toBe(v);
  });

  it('an overwrite makes the key recent', () => {
    const { engine } = three();
    for (const key of ['a', 'b', 'c']) engine.set(key, v);
    engine.set('a', b64('new'));
    engine.set('d', v);
    expect(engine.get('b')).toBeUndefined();
    expect(engine.get('a')).toBe(b64('new'));
  });

  it('TTL and EXPIRE do not count as access (decided)', () => {
    const { engine } = three();
    for (const key of ['a', 'b', 'c']) engine.set(key, v);
    expect(engine.ttl('a')).toBe(-1);
    expect(engine.expire('a', 100)).toBe(true);
    expect(engine.ttl('a')).toBe(100);
    engine.set('d', v);
    expect(engine.get('a')).toBeUndefined();
    expect(engine.get('b')).toBe(v);
  });

  it('an overwrite that grows evicts others, never the key itself', () => {
    const { engine } = three();
    for (const key of ['a', 'b', 'c']) engine.set(key, v);
    expect(engine.set('a', b64('123456'))).toBe('ok'); // 7 bytes: a + one more must go
    expect(engine.get('a')).toBe(b64('123456'));
    expect(engine.get('b')).toBeUndefined();
    expect(engine.get('c')).toBe(v);
    expect(engine.usageBytes).toBe(11);
  });

  it('counts an expired victim as expired, not as evicted', () => {
    const { engine, clock } = three();
    engine.set('a', v, 1);
    engine.set('b', v);
    engine.set('c', v);
    clock.advance(1000);
    engine.set('d', v);
    expect(engine.evictions).toBe(0);
    expect(engine.expired).toBe(1);
    engine.verifyInvariants();
  });

  it('from EXACT_LRU_BELOW_KEYS keys on, a GET moves a key only once it has fallen into the least recent quarter', () => {
    // 8 keys, each 1 key byte + 3 value bytes; a cap of 8 entries, so the ninth SET evicts.
    const eight = () => engineWith({ maxMemoryBytes: 32, exactLruBelowKeys: 8 });
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    // b went in 7 links ago: not fewer than 8 - 8/4, so it may be among the least recent quarter, and it moves.
    {
      const { engine } = eight();
      for (const key of keys) engine.set(key, v);
      engine.get('b');
      engine.set('i', v);
      engine.set('j', v);
      expect(engine.get('a')).toBeUndefined();
      expect(engine.get('c')).toBeUndefined();
      expect(engine.get('b')).toBe(v);
    }
    // d went in 5 links ago: surely among the most recent three quarters, so it keeps its place.
    {
      const { engine } = eight();
      for (const key of keys) engine.set(key, v);
      expect(engine.get('d')).toBe(v);
      for (const key of ['i', 'j', 'k', 'l']) engine.set(key, v);
      expect(engine.get('d')).toBeUndefined(); // evicted fourth, as if it had not been read
      expect(engine.get('e')).toBe(v);
    }
    // Below the threshold (7 keys held) the same read moves it: exact LRU.
    {
      const { engine } = eight();
      for (const key of keys.slice(0, 7)) engine.set(key, v);
      engine.get('b');
      engine.set('h', v);
      engine.set('i', v);
      engine.set('j', v);
      expect(engine.get('a')).toBeUndefined();
      expect(engine.get('c')).toBeUndefined();
      expect(engine.get('b')).toBe(v);
    }
  });

  it('refuses a negative or fractional exactLruBelowKeys', () => {
    for (const exactLruBelowKeys of [-1, 1.5, Number.NaN]) {
      expect(() => engineWith({ exactLruBelowKeys })).toThrow(/exactLruBelowKeys/);
    }
  });

  it('evicts many keys in LRU order while ten keys stay hot', () => {
    // A benchmark-sized workload (no timing asserted): 250,000 evictions among 3.3 million
    // commands. Each round sets a new cold key and reads ten hot keys; live keys must stay
    // the hot ten plus the most recent cold ones. With the Map's own order as the LRU list
    // this does not finish: a fresh iterator per eviction rescans the deleted entries at
    // the front, and re-inserting a hot key walks a bucket chain that grows per read.
    const capacity = 50_000;
    const rounds = 300_000;
    const { engine } = engineWith({ maxMemoryBytes: capacity * 9 });
    const value = b64('v'); // every key is 8 bytes, every entry 9 bytes
    const cold = (i: number) => `c${String(i).padStart(7, '0')}`;
    const hot = Array.from({ length: 10 }, (_, i) => `hot0000${i}`);
    for (const key of hot) engine.set(key, value);
    for (let i = 0; i < rounds; i++) {
      engine.set(cold(i), value);
      for (const key of hot) if (engine.get(key) === undefined) throw new Error(`hot key ${key} evicted`);
    }
    const coldLive = capacity - hot.length;
    expect(engine.keyCount).toBe(capacity);
    expect(engine.evictions).toBe(rounds - coldLive);
    expect(engine.get(cold(rounds - coldLive - 1))).toBeUndefined();
    expect(engine.get(cold(rounds - coldLive))).toBe(value);
    expect(engine.get(cold(rounds - 1))).toBe(value);
    engine.verifyInvariants();
  });
});

describe('hot keys, slot and record reuse', () => {
  const bigEngine = () => {
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    for (let i = 0; i < 100_000; i++) engine.set(`key${i}`, b64('v'));
    return engine;
  };

  it('reads and overwrites the same keys many times', () => {
    const engine = bigEngine();
    for (let i = 0; i < 300_000; i++) {
      if (engine.get(`key${i & 1}`) === undefined) throw new Error('hot key lost');
      engine.set('key7', b64(i % 2 ? 'odd' : 'even'));
    }
    expect(engine.hits).toBe(300_000);
    expect(engine.get('key7')).toBe(b64('odd'));
    engine.verifyInvariants();
  });

  it('sets and deletes the same key many times without growing', () => {
    const engine = bigEngine();
    const usage = engine.usageBytes;
    const recordBytes = engine.recordBytes;
    for (let i = 0; i < 300_000; i++) {
      engine.set('lock', b64('x'));
      if (!engine.delete('lock')) throw new Error('lock not deleted');
    }
    expect(engine.get('lock')).toBeUndefined();
    expect(engine.usageBytes).toBe(usage);
    expect(engine.recordBytes).toBe(recordBytes);
    expect(engine.keyCount).toBe(100_000);
    engine.verifyInvariants();
  });

  it('deletes most keys, releases their pages, and lets the keys come back', () => {
    // Enough records (about 11 MB) that the pages left after the deletes are a small part of them.
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    const value = b64('v'.repeat(20));
    for (let i = 0; i < 400_000; i++) engine.set(`key${i}`, value);
    const full = engine.recordBytes;
    for (let i = 0; i < 360_000; i++) engine.delete(`key${i}`);
    engine.verifyInvariants();
    expect(engine.keyCount).toBe(40_000);
    // Records are packed: what is held follows what is live (plus under two pages per class).
    expect(engine.recordBytes).toBeLessThan(full / 4);
    for (let i = 0; i < 360_000; i += 1000) expect(engine.get(`key${i}`)).toBeUndefined();
    for (let i = 0; i < 400_000; i++) engine.set(`key${i}`, b64('again'));
    expect(engine.keyCount).toBe(400_000);
    expect(engine.get('key0')).toBe(b64('again'));
    expect(engine.get('key359999')).toBe(b64('again'));
    engine.verifyInvariants();
  });

  it('keeps every value exact while overwrites move records between size classes', () => {
    // Sizes around class edges and past LARGE_RECORD_BYTES (records with pages of their own).
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    const sizes = [0, 1, 7, 8, 9, 247, 248, 249, 256, 257, 1000, 16_380, 16_384, 16_385, 40_000];
    const valueOf = (key: number, round: number) => Buffer.alloc(sizes[(key * 7 + round) % sizes.length]!, (key + round) & 0xff);
    for (let round = 0; round < 6; round++) {
      for (let key = 0; key < 60; key++) expect(engine.set(`k${key}`, b64(valueOf(key, round)))).toBe('ok');
      for (let key = 0; key < 60; key += 3) engine.delete(`k${key}`);
      engine.verifyInvariants();
      for (let key = 0; key < 60; key++) {
        expect(engine.get(`k${key}`)).toBe(key % 3 === 0 ? undefined : b64(valueOf(key, round)));
      }
    }
  });

  it('finds keys that share a hash bucket, and keys that are prefixes of each other', () => {
    const { engine } = engineWith();
    const keys = ['a', 'ab', 'abc', 'b', 'ba', 'é', 'e\u0301', 'k'.repeat(250), 'k'.repeat(249)];
    keys.forEach((k, i) => engine.set(k, b64(String(i))));
    keys.forEach((k, i) => expect(engine.get(k)).toBe(b64(String(i))));
    expect(engine.get('abcd')).toBeUndefined();
    expect(engine.get('k'.repeat(248))).toBeUndefined();
    engine.verifyInvariants();
  });
});

describe('incremental growth and shrinking', () => {
  const v = b64('value');
  /** Inserts key{from}..key{to-1} until a resize is under way; returns the next index. */
  const fillUntilResizing = (engine: KvEngine, from: number, limit = 1_000_000): number => {
    let i = from;
    // Until a grow is under way (a shrink started by expired keys is carried on by the inserts).
    while (engine.tableState.nextBuckets <= engine.tableState.buckets) {
      if (i >= limit) throw new Error('no resize started');
      engine.set(`key${i++}`, v);
    }
    return i;
  };

  it('serves lookups, overwrites, deletes, expiry and eviction while the table is half moved', () => {
    // 4 buckets and one bucket moved per insert or removal: a resize spans several commands.
    const { engine, clock } = engineWith({ minBuckets: 4, rehashStepBuckets: 1, maxKeys: 500 });
    const held = new Map<string, string>();
    let next = 0;
    let midResize = 0;
    for (let round = 0; round < 40; round++) {
      const start = next;
      next = fillUntilResizing(engine, next);
      for (let i = start; i < next; i++) held.set(`key${i}`, v);
      const state = engine.tableState;
      expect(state.nextBuckets).toBe(state.buckets * 2);
      expect(state.movedBuckets).toBeLessThan(state.buckets);
      engine.verifyInvariants();
      // Mid-migration: every key is found wherever its bucket is.
      for (const [key, value] of held) if (engine.get(key) !== value) throw new Error(`${key} lost mid-resize`);
      const key = `key${round * 7 % next}`;
      if (engine.tableState.nextBuckets !== 0) midResize++;
      engine.set(key, b64(`round${round}`), 1);
      held.set(key, b64(`round${round}`));
      engine.verifyInvariants();
      const gone = `key${(round * 13 + 1) % next}`;
      expect(engine.delete(gone)).toBe(held.delete(gone));
      engine.verifyInvariants();
      if (round % 5 === 4) {
        clock.advance(1000 + 2 * BUCKET_MS);
        const ttlKeys = [...held.keys()].filter((k) => engine.ttl(k) === null);
        for (const k of ttlKeys) held.delete(k);
        engine.verifyInvariants();
      }
    }
    expect(midResize).toBeGreaterThan(10);
    // maxKeys 500: keys past it evict the least recently used, resizes or not.
    for (let i = 0; i < 600; i++) engine.set(`more${i}`, v);
    expect(engine.keyCount).toBe(500);
    expect(engine.evictions).toBeGreaterThan(0);
    engine.verifyInvariants();
    for (let i = 100; i < 600; i++) expect(engine.get(`more${i}`)).toBe(v);
  });

  it('shrinks the table as keys go, in steps, and grows it again', () => {
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    for (let i = 0; i < 100_000; i++) engine.set(`key${i}`, v);
    engine.verifyInvariants();
    const full = engine.tableState;
    expect(full.buckets + full.nextBuckets).toBeGreaterThanOrEqual(131_072);
    let sawShrink = false;
    for (let i = 0; i < 99_000; i++) {
      engine.delete(`key${i}`);
      const s = engine.tableState;
      if (s.nextBuckets !== 0 && s.nextBuckets < s.buckets) {
        sawShrink = true;
        if (i % 97 === 0) expect(engine.get(`key${i + 1}`)).toBe(v); // found mid-shrink
      }
    }
    expect(sawShrink).toBe(true);
    while (engine.rehashFor(1));
    engine.verifyInvariants();
    // 1,000 keys: a shrink starts below an eighth of the buckets and halves to twice the next power of two.
    expect(engine.tableState.buckets).toBeLessThanOrEqual(8192);
    expect(engine.tableState.buckets).toBeGreaterThanOrEqual(MIN_BUCKETS);
    for (let i = 99_000; i < 100_000; i += 37) expect(engine.get(`key${i}`)).toBe(v);
    for (let i = 0; i < 50_000; i++) engine.set(`back${i}`, v);
    expect(engine.tableState.buckets + engine.tableState.nextBuckets).toBeGreaterThanOrEqual(65_536);
    engine.verifyInvariants();
    expect(engine.keyCount).toBe(51_000);
  });

  it('rehashFor finishes a resize on an idle engine within its bucket budget per call', () => {
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    fillUntilResizing(engine, 0);
    const { buckets, movedBuckets } = engine.tableState;
    expect(movedBuckets).toBeLessThan(buckets);
    // A frozen clock: the bucket budget stops each call. A call moves at most that many
    // buckets (empty ones aside).
    let calls = 0;
    while (engine.rehashFor(0)) {
      calls++;
      engine.verifyInvariants();
      if (calls > buckets) throw new Error('resize never finishes');
    }
    expect(calls).toBeGreaterThan(0);
    expect(engine.tableState).toEqual({ buckets: buckets * 2, nextBuckets: 0, movedBuckets: 0 });
    expect(engine.rehashFor(5)).toBe(false);
    // One call with a budget of 1 ms moves up to REHASH_BUCKETS_PER_MS buckets.
    const big = engineWith({ maxMemoryBytes: 1 << 30 }).engine;
    fillUntilResizing(big, 0, 2 * REHASH_BUCKETS_PER_MS);
    let i = 0;
    while (big.tableState.buckets < 2 * REHASH_BUCKETS_PER_MS) big.set(`k${i++}`, v);
    fillUntilResizing(big, 10_000_000, 20_000_000);
    const before = big.tableState.movedBuckets;
    big.rehashFor(1);
    const moved = big.tableState.nextBuckets === 0 ? Infinity : big.tableState.movedBuckets - before;
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThanOrEqual(REHASH_BUCKETS_PER_MS * 17); // empty buckets are visited, not counted
    big.verifyInvariants();
  });

  it('a dropped table goes back to the OS a step per background call, not at once (nor at a collection)', () => {
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    engine.reserve(600_000, 12); // a table of 2^20 buckets: 4 MiB
    const big = engine.tableState.buckets * 4;
    expect(big).toBe(4 * REAP_STEP_BYTES);
    for (let i = 0; i < 100; i++) engine.set(`k${i}`, v);
    engine.endReserve(); // 100 keys in 2^20 buckets: a shrink starts
    while (engine.tableState.nextBuckets !== 0) engine.rehashFor(0);
    const footprint = engine.footprintBytes;
    expect(engine.reapingBytes).toBeGreaterThanOrEqual(big); // the start-up table may still be there too
    engine.verifyInvariants();
    // A frozen clock: each call gives back one step.
    let last = engine.reapingBytes;
    let calls = 0;
    while (engine.rehashFor(0)) {
      calls++;
      const now = engine.reapingBytes;
      expect(now).toBeLessThan(last);
      expect(last - now).toBeLessThanOrEqual(REAP_STEP_BYTES);
      engine.verifyInvariants();
      last = now;
    }
    expect(engine.reapingBytes).toBe(0);
    expect(calls).toBeGreaterThanOrEqual(3);
    expect(engine.footprintBytes).toBe(footprint);
    for (let i = 0; i < 100; i++) expect(engine.get(`k${i}`)).toBe(v);
    engine.verifyInvariants();
  });

  it('slot arrays grow in place: keys across several growths keep their values and TTLs, freed slots are reused', () => {
    const { engine, clock } = engineWith({ maxMemoryBytes: 1 << 30 });
    const n = 3 * SLOT_GROWTH; // past the doublings, then growth in fixed steps
    for (let i = 0; i < n; i++) engine.set(`s${i}`, b64(String(i)), i % 3 === 0 ? 10 : undefined);
    engine.verifyInvariants();
    for (let i = 0; i < n; i += 101) {
      expect(engine.get(`s${i}`)).toBe(b64(String(i)));
      expect(engine.ttl(`s${i}`)).toBe(i % 3 === 0 ? 10 : -1);
    }
    for (let i = 0; i < n; i += 2) engine.delete(`s${i}`);
    for (let i = 0; i < n; i += 2) engine.set(`t${i}`, v); // takes the freed slots
    engine.verifyInvariants(); // checks the arrays' room against the slots in use
    clock.advance(10_000 + 2 * BUCKET_MS);
    let swept = 0;
    for (let k = engine.sweepExpired(); k > 0; k = engine.sweepExpired()) swept += k;
    expect(swept).toBe(Math.ceil(n / 3) - Math.ceil(n / 6));
    engine.verifyInvariants();
  });

  it("reserve's filter of new keys never calls a seen hash new, and calls few new hashes seen", () => {
    const buckets = 1 << 16;
    const filter = new NewKeyFilter(buckets);
    const seen: number[] = [];
    let looked = 0;
    for (let i = 0; i < buckets; i++) {
      const h = (Math.random() * 2 ** 32) | 0;
      if (filter.mayHold(h)) looked++;
      seen.push(h);
    }
    for (const h of seen) expect(filter.mayHold(h)).toBe(true);
    // 8 bits per key: a new key looks at most 1 - e^(-1/8) = 12% of the time, ~6% on average over the fill.
    expect(looked / buckets).toBeLessThan(0.1);
    expect(looked).toBeGreaterThan(0);
  });

  it('reserve sizes the table and slot arrays up front: inserts up to it neither resize nor grow, and endReserve gives back what went unused', () => {
    const { engine } = engineWith({ maxMemoryBytes: 1 << 30 });
    const n = 3 * SLOT_GROWTH;
    expect(engine.reserve(n, 12)).toBe(n);
    engine.verifyInvariants(); // a large empty table while reserved is not a missed shrink
    const reserved = engine.tableState;
    expect(reserved).toEqual({ buckets: 262_144, nextBuckets: 0, movedBuckets: 0 });
    const footprint = engine.footprintBytes;
    const arena = engine.arenaBytes;
    for (let i = 0; i < n; i++) {
      engine.set(`r${i}`, v, i % 5 === 0 ? 10 : undefined);
      if (i % 4096 === 0) expect(engine.tableState).toEqual(reserved);
    }
    expect(engine.tableState).toEqual(reserved);
    // Only the records' arena grew: the slot arrays and the table were there already.
    expect(engine.footprintBytes - engine.arenaBytes).toBe(footprint - arena);
    engine.verifyInvariants();
    for (let i = 0; i < n; i += 97) expect(engine.get(`r${i}`)).toBe(v);
    // While reserved, an insert skips the chain walk only for a key it has not seen: a key
    // set again, or deleted and set again, stays one key.
    for (let i = 0; i < n; i += 10) expect(engine.set(`r${i}`, b64(`again${i}`))).toBe('ok');
    let keys = n;
    for (let i = 5; i < n; i += 10, keys--) expect(engine.delete(`r${i}`)).toBe(true);
    for (let i = 5; i < n; i += 20, keys++) expect(engine.set(`r${i}`, b64(`back${i}`))).toBe('ok');
    expect(engine.keyCount).toBe(keys);
    engine.verifyInvariants();
    for (let i = 0; i < n; i += 10) expect(engine.get(`r${i}`)).toBe(b64(`again${i}`));
    for (let i = 5; i < n; i += 10) expect(engine.get(`r${i}`)).toBe(i % 20 === 5 ? b64(`back${i}`) : undefined);
    engine.endReserve();
    engine.verifyInvariants();
    expect(() => engine.reserve(10, 12)).toThrow(/empty engine/);

    // Fewer keys than reserved: endReserve lets the table shrink and gives the slot room back.
    const few = engineWith({ maxMemoryBytes: 1 << 30 }).engine;
    few.reserve(n, 12);
    for (let i = 0; i < 1000; i++) few.set(`f${i}`, v);
    const held = few.footprintBytes;
    few.endReserve();
    few.verifyInvariants();
    while (few.rehashFor(1));
    few.verifyInvariants();
    expect(few.tableState.buckets).toBeLessThanOrEqual(8192);
    expect(few.footprintBytes).toBeLessThan(held - 2 * SLOT_GROWTH * 40);
    for (let i = 0; i < 1000; i++) expect(few.get(`f${i}`)).toBe(v);
    for (let i = 0; i < 5000; i++) few.set(`g${i}`, v); // grows again step by step
    few.verifyInvariants();
    expect(few.keyCount).toBe(6000);
  });

  it('reserve is clamped to what fits under maxKeys, the cap and the footprint limit', () => {
    const keysOnly = engineWith({ maxMemoryBytes: 1 << 30, maxKeys: 500 }).engine;
    expect(keysOnly.reserve(1_000_000, 10)).toBe(500);
    const capped = engineWith({ maxMemoryBytes: 100_000 }).engine;
    expect(capped.reserve(1_000_000, 100)).toBeLessThanOrEqual(1000);
    expect(capped.footprintBytes).toBeLessThanOrEqual(capped.footprintLimitBytes);
    capped.verifyInvariants();
    // Tiny records: the slots and buckets are the footprint, and they stay within its limit.
    const tiny = engineWith({ maxMemoryBytes: 1 << 20 }).engine;
    const room = tiny.reserve(10_000_000, 1);
    expect(room).toBeGreaterThan(0);
    expect(room).toBeLessThan(10_000_000);
    expect(tiny.footprintBytes).toBeLessThanOrEqual(tiny.footprintLimitBytes);
    tiny.verifyInvariants();
    expect(engineWith().engine.reserve(0, 100)).toBe(0);
    expect(() => engineWith().engine.reserve(-1, 100)).toThrow(RangeError);
  });

  it('an insert sequence past the cap keeps the same keys with or without a reserve', () => {
    for (const options of [{ maxMemoryBytes: 50_000 }, { maxMemoryBytes: 1 << 20, maxKeys: 3000 }, { maxMemoryBytes: 200_000, evictionPolicy: 'noeviction' as const }]) {
      const plain = engineWith(options).engine;
      const reserved = engineWith(options).engine;
      reserved.reserve(20_000, 4 + 60);
      const value = Buffer.alloc(60, 0x41);
      const outcomes: string[][] = [[], []];
      for (let i = 0; i < 20_000; i++) {
        const key = `k${String(i).padStart(5, '0')}`.slice(0, 4 + (i % 3));
        outcomes[0]!.push(plain.setBytes(key + i, value, 0, value.length));
        outcomes[1]!.push(reserved.setBytes(key + i, value, 0, value.length));
      }
      reserved.endReserve();
      plain.verifyInvariants();
      reserved.verifyInvariants();
      expect(reserved.keyCount).toBe(plain.keyCount);
      expect(outcomes[1]).toEqual(outcomes[0]);
      for (let i = 0; i < 20_000; i += 7) {
        const key = `k${String(i).padStart(5, '0')}`.slice(0, 4 + (i % 3)) + i;
        expect(reserved.get(key)).toBe(plain.get(key));
      }
    }
  });

  it('a load past the footprint limit with a reserve keeps the most recent keys, within a step of the same count', () => {
    // 8-byte keys and 20-byte values: the slots and buckets, not USAGE, reach the limit first
    // (with a cap large enough that the arena's fixed slack, about 20 MiB, does not hide them).
    const options = { maxMemoryBytes: 32 << 20 };
    const plain = engineWith(options).engine;
    const reserved = engineWith(options).engine;
    const n = 1_000_000;
    expect(reserved.reserve(n, 28)).toBeLessThan(n);
    const value = Buffer.alloc(20, 0x41);
    const keyOf = (i: number): string => `k${String(i).padStart(7, '0')}`;
    for (let i = 0; i < n; i++) {
      plain.setBytes(keyOf(i), value, 0, value.length);
      reserved.setBytes(keyOf(i), value, 0, value.length);
      if (i % 100_000 === 0) expect(reserved.footprintBytes).toBeLessThanOrEqual(reserved.footprintLimitBytes);
    }
    reserved.endReserve();
    plain.verifyInvariants();
    reserved.verifyInvariants();
    expect(plain.footprintEvictions).toBeGreaterThan(0);
    expect(reserved.footprintEvictions).toBeGreaterThan(0);
    // Tables sized at once instead of in growth steps: at most a growth step's worth more keys.
    expect(reserved.keyCount).toBeGreaterThanOrEqual(plain.keyCount);
    expect(reserved.keyCount).toBeLessThanOrEqual(plain.keyCount + SLOT_GROWTH);
    for (const engine of [plain, reserved]) {
      const first = n - engine.keyCount;
      expect(engine.get(keyOf(first - 1))).toBeUndefined();
      for (let i = first; i < n; i += 101) expect(engine.get(keyOf(i))).toBeDefined();
    }
  });

  it('rejects table options that are not powers of two or steps below one', () => {
    const base = { maxMemoryBytes: 10, evictionPolicy: 'lru' } as const;
    expect(() => new KvEngine({ ...base, minBuckets: 3 })).toThrow(/minBuckets/);
    expect(() => new KvEngine({ ...base, minBuckets: 0 })).toThrow(/minBuckets/);
    expect(() => new KvEngine({ ...base, rehashStepBuckets: 0 })).toThrow(/rehashStepBuckets/);
    expect(new KvEngine({ ...base, minBuckets: 1 }).tableState).toEqual({ buckets: 1, nextBuckets: 0, movedBuckets: 0 });
  });
});

describe('expiry storm', () => {
  it('reports what is due, and bounded sweeps clear a storm of keys expiring together', () => {
    const { engine, clock } = engineWith({ maxMemoryBytes: 1 << 30 });
    const total = 200_000;
    for (let i = 0; i < total; i++) engine.set(`storm${i}`, b64('v'), 1 + (i % 2));
    for (let i = 0; i < 1000; i++) engine.set(`later${i}`, b64('v'), 100);
    expect(engine.expiryDue).toBe(false);
    expect(engine.expiryBacklog).toBe(0);
    clock.advance(1000 + BUCKET_MS);
    expect(engine.expiryDue).toBe(true);
    expect(engine.expiryBacklog).toBe(total / 2);
    clock.advance(1000);
    expect(engine.expiryBacklog).toBe(total);
    let slices = 0;
    while (engine.expiryDue) {
      engine.sweepExpired(2);
      slices++;
      if (slices > total) throw new Error('sweep makes no progress');
    }
    expect(slices).toBeGreaterThanOrEqual(total / (2 * SWEEP_ENTRIES_PER_MS));
    expect(engine.expiryBacklog).toBe(0);
    expect(engine.keyCount).toBe(1000);
    expect(engine.expired).toBe(total);
    engine.verifyInvariants();
  });
});

describe('memory cap', () => {
  const v = b64('xyz');

  it('noeviction refuses a set that would pass the cap and changes nothing', () => {
    const { engine } = engineWith({ maxMemoryBytes: 12, evictionPolicy: 'noeviction' });
    for (const key of ['a', 'b', 'c']) expect(engine.set(key, v)).toBe('ok');
    const before = { usage: engine.usageBytes, keys: engine.keyCount, evictions: engine.evictions };
    expect(engine.set('d', v)).toBe('out_of_memory');
    expect(engine.set('a', b64('four'))).toBe('out_of_memory'); // overwrite: +1 over the cap
    expect(engine.set('d', '', 10)).toBe('out_of_memory');
    expect({ usage: engine.usageBytes, keys: engine.keyCount, evictions: engine.evictions }).toEqual(before);
    expect(engine.get('d')).toBeUndefined();
    expect(engine.get('a')).toBe(v);
    expect(engine.ttl('d')).toBeNull();
    // An overwrite counts new minus old: same size or smaller fits.
    expect(engine.set('a', b64('abc'))).toBe('ok');
    expect(engine.set('b', b64('ab'))).toBe('ok');
    expect(engine.set('d', '')).toBe('ok'); // 1 byte: exactly at the cap
    expect(engine.usageBytes).toBe(12);
    engine.verifyInvariants();
  });

  for (const evictionPolicy of ['lru', 'noeviction'] as const) {
    it(`${evictionPolicy}: a single entry larger than the cap fails without evicting anything`, () => {
      const { engine } = engineWith({ maxMemoryBytes: 12, evictionPolicy });
      engine.set('a', v);
      engine.set('b', v);
      expect(engine.set('big', b64('0123456789'))).toBe('out_of_memory'); // 3 + 10 bytes
      expect(engine.set('a', b64('012345678901'))).toBe('out_of_memory'); // an overwrite too
      expect(engine.set('cc', b64('01234567890'), 5)).toBe('out_of_memory');
      expect(engine.evictions).toBe(0);
      expect(engine.keyCount).toBe(2);
      expect(engine.usageBytes).toBe(8);
      expect(engine.get('a')).toBe(v);
      expect(engine.get('b')).toBe(v);
      expect(engine.ttl('cc')).toBeNull();
    });
  }
});

describe('key count limit', () => {
  it('past maxKeys a new key evicts the least recently used one (lru) or is refused (noeviction)', () => {
    const lru = engineWith({ maxKeys: 3 }).engine;
    for (const key of ['a', 'b', 'c']) lru.set(key, b64('v'));
    lru.get('a');
    expect(lru.set('d', b64('v'))).toBe('ok');
    expect(lru.get('b')).toBeUndefined();
    expect(lru.evictions).toBe(1);
    expect(lru.set('a', b64('overwrite'))).toBe('ok'); // an existing key is no new key
    expect(lru.keyCount).toBe(3);
    lru.verifyInvariants();

    const strict = engineWith({ maxKeys: 3, evictionPolicy: 'noeviction' }).engine;
    for (const key of ['a', 'b', 'c']) strict.set(key, b64('v'));
    expect(strict.set('d', b64('v'))).toBe('out_of_memory');
    expect(strict.set('c', b64('still fits'))).toBe('ok');
    expect(strict.delete('a')).toBe(true);
    expect(strict.set('d', b64('v'))).toBe('ok');
    expect(strict.keyCount).toBe(3);
    strict.verifyInvariants();
    expect(() => new KvEngine({ maxMemoryBytes: 10, evictionPolicy: 'lru', maxKeys: 2 ** 40 })).toThrow(RangeError);
  });
});

describe('time to live', () => {
  const v = b64('value');

  it('a plain SET clears the TTL', () => {
    const { engine, clock } = engineWith();
    engine.set('k', v, 10);
    expect(engine.ttl('k')).toBe(10);
    engine.set('k', v);
    expect(engine.ttl('k')).toBe(-1);
    expect(engine.keysWithTtl).toBe(0);
    clock.advance(20_000);
    expect(engine.sweepExpired()).toBe(0);
    expect(engine.get('k')).toBe(v);
  });

  it('reports whole seconds rounded up', () => {
    const { engine, clock } = engineWith();
    clock.advance(7517.870844203658); // here (t + 1000) - t > 1000 in floating point
    engine.set('one', v, 1);
    expect(engine.ttl('one')).toBe(1);
    clock.t = 0;
    engine.set('three', v, 3);
    clock.advance(1500);
    expect(engine.ttl('three')).toBe(2);
    clock.advance(1499);
    expect(engine.ttl('three')).toBe(1);
    clock.advance(1);
    expect(engine.ttl('three')).toBeNull();
    expect(engine.ttl('missing')).toBeNull();
  });

  it('EXPIRE sets, replaces and reports absence', () => {
    const { engine, clock } = engineWith();
    expect(engine.expire('k', 5)).toBe(false);
    engine.set('k', v);
    expect(engine.expire('k', 5)).toBe(true);
    expect(engine.ttl('k')).toBe(5);
    expect(engine.expire('k', 100)).toBe(true);
    clock.advance(50_000);
    expect(engine.ttl('k')).toBe(50);
    expect(engine.expire('k', 1)).toBe(true);
    clock.advance(1000);
    expect(engine.expire('k', 5)).toBe(false);
    expect(engine.keysWithTtl).toBe(0);
  });

  it('never returns an expired key, whichever command touches it', () => {
    const { engine, clock } = engineWith();
    for (const key of ['g', 't', 'e', 'd', 's']) engine.set(key, v, 2);
    engine.set('keep', v);
    const usage = engine.usageBytes;
    clock.advance(1999);
    expect(engine.get('g')).toBe(v);
    clock.advance(1);
    expect(engine.get('g')).toBeUndefined();
    expect(engine.ttl('t')).toBeNull();
    expect(engine.expire('e', 10)).toBe(false);
    expect(engine.delete('d')).toBe(false);
    expect(engine.set('s', b64('fresh'))).toBe('ok'); // replaces the expired value
    expect(engine.expired).toBe(5);
    expect(engine.keyCount).toBe(2);
    expect(engine.usageBytes).toBe(usage - 4 * entryBytes('g', 'value'));
    expect(engine.get('s')).toBe(b64('fresh'));
    engine.verifyInvariants();
  });

  it('the sweep removes expired keys nobody reads', () => {
    const { engine, clock } = engineWith();
    for (let i = 0; i < 100; i++) engine.set(`short${i}`, v, 1);
    for (let i = 0; i < 100; i++) engine.set(`long${i}`, v, 60);
    for (let i = 0; i < 100; i++) engine.set(`plain${i}`, v);
    const perKey = (key: string) => entryBytes(key, 'value');
    let shortBytes = 0;
    for (let i = 0; i < 100; i++) shortBytes += perKey(`short${i}`);
    const usage = engine.usageBytes;

    clock.advance(999);
    expect(engine.sweepExpired()).toBe(0);
    // Removed at most one bucket width after expiry, well within SPEC's 2 seconds.
    clock.advance(1 + BUCKET_MS);
    expect(engine.sweepExpired()).toBe(100);
    expect(engine.expired).toBe(100);
    expect(engine.keyCount).toBe(200);
    expect(engine.usageBytes).toBe(usage - shortBytes);
    expect(engine.sweepExpired()).toBe(0);
    expect(engine.get('long5')).toBe(v);
    expect(engine.misses).toBe(0);
    engine.verifyInvariants();
  });

  it('a key whose TTL moved later is not swept at its old time', () => {
    const { engine, clock } = engineWith();
    engine.set('moved', v, 1);
    engine.set('deleted', v, 1);
    engine.set('cleared', v, 1);
    engine.expire('moved', 10);
    engine.delete('deleted');
    engine.set('cleared', v);
    clock.advance(2000);
    expect(engine.sweepExpired()).toBe(0);
    expect(engine.expired).toBe(0);
    clock.advance(9000);
    expect(engine.sweepExpired()).toBe(1);
    expect(engine.get('moved')).toBeUndefined();
    expect(engine.get('cleared')).toBe(v);
  });

  it('sweeps many keys across several bounded calls', () => {
    const { engine, clock } = engineWith({ maxMemoryBytes: 1 << 30 });
    const total = 45_000;
    for (let i = 0; i < total; i++) engine.set(`key${i}`, v, 1 + (i % 3));
    clock.advance(5000);
    // The fake clock stands still during a call, so the entry bound is what stops it.
    const perCall = SWEEP_ENTRIES_PER_MS * 1;
    const removed: number[] = [];
    for (let n = engine.sweepExpired(1); n > 0; n = engine.sweepExpired(1)) removed.push(n);
    expect(removed.length).toBe(Math.ceil(total / perCall));
    expect(Math.max(...removed)).toBe(perCall);
    expect(removed.reduce((a, b) => a + b, 0)).toBe(total);
    expect(engine.keyCount).toBe(0);
    expect(engine.usageBytes).toBe(0);
    expect(engine.expired).toBe(total);
    engine.verifyInvariants();
  });

  it('reads and deletes between bounded sweeps of the same buckets', () => {
    const { engine, clock } = engineWith({ maxMemoryBytes: 1 << 30 });
    const total = 30_000;
    for (let i = 0; i < total; i++) engine.set(`key${i}`, v, 1);
    clock.advance(2000);
    let swept = engine.sweepExpired(1);
    expect(swept).toBe(SWEEP_ENTRIES_PER_MS);
    let lazy = 0;
    for (let i = 0; i < total; i += 7) {
      const held = engine.keyCount;
      const gone = i % 2 ? engine.get(`key${i}`) === undefined : engine.delete(`key${i}`) === false;
      expect(gone).toBe(true);
      lazy += held - engine.keyCount; // 1 if the sweep had not reached it yet
    }
    expect(lazy).toBeGreaterThan(0);
    engine.verifyInvariants();
    for (let n = engine.sweepExpired(1); n > 0; n = engine.sweepExpired(1)) swept += n;
    expect(swept + lazy).toBe(total);
    expect(engine.expired).toBe(total);
    expect(engine.usageBytes).toBe(0);
    engine.verifyInvariants();
  });

  it('keeps the bucket heap in step when TTL keys come and go', () => {
    const { engine, clock } = engineWith({ maxMemoryBytes: 1 << 30 });
    // Every key in a bucket of its own. Deleted keys leave ids of empty buckets in the
    // heap, which is rebuilt from the live buckets once they pile up.
    for (let i = 1; i <= 100; i++) engine.set(`stay${i}`, v, i);
    for (let round = 0; round < 5; round++) {
      for (let i = 101; i <= 600; i++) engine.set(`r${round}k${i}`, v, i);
      for (let i = 101; i <= 600; i++) engine.delete(`r${round}k${i}`);
      engine.verifyInvariants();
    }
    expect(engine.keysWithTtl).toBe(100);
    clock.advance(101_000);
    let swept = 0;
    for (let n = engine.sweepExpired(); n > 0; n = engine.sweepExpired()) swept += n;
    expect(swept).toBe(100);
    expect(engine.keyCount).toBe(0);
    engine.verifyInvariants();
  });

  it('a sweep stops when its time budget is spent', () => {
    const clock = fakeClock();
    let readings = 0;
    const engine = new KvEngine({
      maxMemoryBytes: 1 << 30,
      evictionPolicy: 'lru',
      now: () => clock.t + readings++ * 0.1, // every reading of the clock takes 0.1 ms
    });
    for (let i = 0; i < 20_000; i++) engine.set(`key${i}`, v, 1);
    clock.advance(10_000);
    const first = engine.sweepExpired(1);
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(SWEEP_ENTRIES_PER_MS);
    engine.verifyInvariants();
  });
});

// A reference model of SPEC §1 kept as a plain array in LRU order (index 0 = least recent),
// compared with the engine after every command of random command sequences.
describe('against a reference model', () => {
  type Model = { key: string; value: string; bytes: number; expiresAt: number | null }[];
  const keys = ['a', 'b', 'ключ', '鍵', '🔑', 'k5'];
  const cmd = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.constantFrom(...keys), value: fc.uint8Array({ maxLength: 14 }), ttl: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }) }),
    fc.record({ op: fc.constant('get' as const), key: fc.constantFrom(...keys) }),
    fc.record({ op: fc.constant('delete' as const), key: fc.constantFrom(...keys) }),
    fc.record({ op: fc.constant('expire' as const), key: fc.constantFrom(...keys), ttl: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ op: fc.constant('ttl' as const), key: fc.constantFrom(...keys) }),
    fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 2500 }) }),
    fc.record({ op: fc.constant('sweep' as const) }),
  );

  for (const evictionPolicy of ['lru', 'noeviction'] as const) {
    it(`${evictionPolicy}: same replies, usage and counters`, () => {
      fc.assert(
        fc.property(fc.array(cmd, { maxLength: 80 }), fc.integer({ min: 4, max: 48 }), (cmds, max) => {
          const { engine, clock } = engineWith({ maxMemoryBytes: max, evictionPolicy });
          const model: Model = [];
          const stats = { evictions: 0, expired: 0, hits: 0, misses: 0 };
          const usage = () => model.reduce((a, e) => a + e.bytes, 0);
          const dead = (e: Model[number]) => e.expiresAt !== null && e.expiresAt <= clock.t;
          const find = (key: string) => model.findIndex((e) => e.key === key);
          const live = (key: string) => {
            const i = find(key);
            if (i >= 0 && dead(model[i]!)) {
              model.splice(i, 1);
              stats.expired++;
              return -1;
            }
            return i;
          };
          for (const c of cmds) {
            switch (c.op) {
              case 'set': {
                const value = b64(c.value);
                const bytes = entryBytes(c.key, c.value);
                const i = find(c.key);
                const old = i >= 0 ? model[i]!.bytes : 0;
                const refused = bytes > max || (evictionPolicy === 'noeviction' && usage() - old + bytes > max);
                expect(engine.set(c.key, value, c.ttl)).toBe(refused ? 'out_of_memory' : 'ok');
                if (refused) break;
                if (i >= 0) {
                  if (dead(model[i]!)) stats.expired++;
                  model.splice(i, 1);
                }
                while (usage() + bytes > max) {
                  const victim = model.shift()!;
                  if (dead(victim)) stats.expired++;
                  else stats.evictions++;
                }
                model.push({ key: c.key, value, bytes, expiresAt: c.ttl === undefined ? null : clock.t + c.ttl * 1000 });
                break;
              }
              case 'get': {
                const i = live(c.key);
                if (i < 0) stats.misses++;
                else {
                  stats.hits++;
                  model.push(...model.splice(i, 1));
                }
                expect(engine.get(c.key)).toBe(i < 0 ? undefined : model.at(-1)!.value);
                break;
              }
              case 'delete': {
                const i = live(c.key);
                if (i >= 0) model.splice(i, 1);
                expect(engine.delete(c.key)).toBe(i >= 0);
                break;
              }
              case 'expire': {
                const i = live(c.key);
                if (i >= 0) model[i]!.expiresAt = clock.t + c.ttl * 1000;
                expect(engine.expire(c.key, c.ttl)).toBe(i >= 0);
                break;
              }
              case 'ttl': {
                const i = live(c.key);
                const e = model[i];
                const want = i < 0 ? null : e!.expiresAt === null ? -1 : Math.ceil((e!.expiresAt - clock.t) / 1000);
                expect(engine.ttl(c.key)).toBe(want);
                break;
              }
              case 'advance':
                clock.advance(c.ms);
                break;
              case 'sweep': {
                // Documented: a key is swept once its whole time bucket has passed.
                const due = (e: Model[number]) =>
                  e.expiresAt !== null && Math.floor(e.expiresAt / BUCKET_MS) < Math.floor(clock.t / BUCKET_MS);
                const n = model.filter(due).length;
                for (let i = model.length - 1; i >= 0; i--) if (due(model[i]!)) model.splice(i, 1);
                stats.expired += n;
                expect(engine.sweepExpired()).toBe(n);
                break;
              }
            }
            expect(engine.usageBytes).toBe(usage());
            expect(engine.keyCount).toBe(model.length);
            expect({ evictions: engine.evictions, expired: engine.expired, hits: engine.hits, misses: engine.misses }).toEqual(stats);
            engine.verifyInvariants();
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});
