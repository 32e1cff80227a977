// The record arena's memory: what it holds follows what is live, freed memory leaves at
// once (no garbage collection), its footprint is accounted exactly, and the engine keeps
// that footprint under its limit by evicting (lru) or refusing (noeviction).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KvEngine } from '../services/store/engine/kv-engine.ts';
import { arenaEmptyBytes, arenaPageTarget, arenaSlackBytes, LARGE_RECORD_BYTES, MIN_PAGE_TARGET, RecordArena } from '../services/store/engine/record-arena.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { parseExposition, sampleValue } from '../bench/harness/exposition.ts';
import { viewOf } from '../services/shared/byte-views.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';
import { loadSocketIo } from '../services/store/network/native-io.ts';

afterEach(destroyAll);

/** A seeded generator, so a failure replays. */
function rng(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
}

/** Records held by owner id, so the test knows where each one lives after chunks move. */
class Holder {
  readonly arena = new RecordArena(1 << 30);
  /** owner → [cls, chunk] */
  readonly at = new Map<number, [number, number]>();
  #next = 1;

  add(bytes: number): number {
    const owner = this.#next++;
    const cls = this.arena.classOf(bytes);
    const before = this.arena.footprintBytes;
    const cost = this.arena.allocCost(cls, bytes);
    const chunk = this.arena.alloc(cls, owner, bytes);
    expect(this.arena.footprintBytes - before).toBe(cost);
    const c = this.arena.classes[cls]!;
    c.pageOf(chunk).fill(owner & 0xff, c.offsetOf(chunk), c.offsetOf(chunk) + Math.max(1, bytes));
    this.at.set(owner, [cls, chunk]);
    return owner;
  }

  remove(owner: number): void {
    const [cls, chunk] = this.at.get(owner)!;
    this.at.delete(owner);
    const moved = this.arena.free(cls, chunk);
    if (moved !== -1) this.at.set(moved, [cls, chunk]);
  }

  verify(): void {
    const chunks = this.arena.verify((owner, cls, chunk) => {
      const where = this.at.get(owner);
      if (where === undefined || where[0] !== cls || where[1] !== chunk) return false;
      const c = this.arena.classes[cls]!;
      return c.pageOf(chunk)[c.offsetOf(chunk)] === (owner & 0xff); // the bytes moved with their owner
    });
    expect(chunks).toBe(this.at.size);
  }
}

describe('record arena', () => {
  it('accounts every byte it commits: allocCost predicts each allocation, verify recomputes the total', () => {
    const h = new Holder();
    const random = rng(7);
    const live: number[] = [];
    for (let op = 0; op < 20_000; op++) {
      if (live.length > 0 && random(3) === 0) {
        const k = random(live.length);
        h.remove(live[k]!);
        live[k] = live[live.length - 1]!;
        live.pop();
      } else {
        const bytes = random(4) === 0 ? random(3 * LARGE_RECORD_BYTES) : random(600);
        live.push(h.add(bytes));
      }
      if (op % 2000 === 0) h.verify();
    }
    h.verify();
  });

  it('gives the memory back as records leave, without a garbage collection', () => {
    const h = new Holder();
    const empty = h.arena.footprintBytes;
    // 40 MB over a size class, a mid-size class and large records.
    const owners: number[] = [];
    for (let i = 0; i < 100_000; i++) owners.push(h.add(200));
    for (let i = 0; i < 1_000; i++) owners.push(h.add(9000));
    for (let i = 0; i < 150; i++) owners.push(h.add(LARGE_RECORD_BYTES + 1 + i * 1000));
    const full = h.arena.footprintBytes;
    expect(full - empty).toBeGreaterThan(40e6);
    const externalFull = process.memoryUsage().external;
    const largeRecord = h.arena.classes[h.arena.large]!.pages[0]!;
    const firstPages = [h.arena.classOf(200), h.arena.classOf(9000)].map((cls) => h.arena.classes[cls]!.pages[0]!);
    const lastPages = [h.arena.classOf(200), h.arena.classOf(9000)].map((cls) => h.arena.classes[cls]!.pages.at(-1)!);

    for (const owner of owners) h.remove(owner);
    h.verify();
    // What stays is at most a spare page per class used; the other pages and the large records' buffers are unmapped.
    const sparePages = h.arena.classes[h.arena.classOf(200)]!.pageBytes + h.arena.classes[h.arena.classOf(9000)]!.pageBytes;
    expect(h.arena.pageBytes).toBeLessThanOrEqual(sparePages);
    expect(h.arena.footprintBytes - empty).toBeLessThan(sparePages + 4096); // owner arrays shrink back too
    expect((largeRecord.buffer as ArrayBuffer).detached).toBe(true);
    expect(lastPages.map((p) => (p.buffer as ArrayBuffer).detached)).toEqual([true, true]);
    expect(firstPages.map((p) => (p.buffer as ArrayBuffer).detached)).toEqual([false, false]); // the spares
    // Memory outside the heap dropped by what was freed, though no collection was asked for.
    expect(externalFull - process.memoryUsage().external).toBeGreaterThan(0.95 * (full - empty));
  });

  it('writes and compares bytes at any offset and length, word by word or byte by byte', () => {
    const arena = new RecordArena(1 << 26);
    const random = rng(3);
    for (let round = 0; round < 2000; round++) {
      const bytes = 1 + random(round % 10 === 0 ? 2 * LARGE_RECORD_BYTES : 300);
      const cls = arena.classOf(bytes);
      const chunk = arena.alloc(cls, round, bytes);
      const c = arena.classes[cls]!;
      const src = Buffer.alloc(bytes + 7);
      for (let k = 0; k < src.length; k++) src[k] = random(256);
      const from = random(8);
      const offset = random(Math.min(bytes, 9));
      const end = from + bytes - offset;
      c.write(chunk, offset, src, from, end);
      const at = c.offsetOf(chunk) + offset;
      expect(c.pageOf(chunk).subarray(at, at + (end - from)).equals(src.subarray(from, end))).toBe(true);
      if (offset === 0) {
        expect(c.startsWith(chunk, viewOf(src), from, end)).toBe(true);
        const probe = Buffer.from(src.subarray(from, end));
        probe[random(probe.length)]! ^= 1;
        expect(c.startsWith(chunk, viewOf(probe), 0, probe.length)).toBe(false);
      }
    }
  });

  it('keeps one spare page, so a SET/DELETE at a page edge does not map and unmap each time', () => {
    const h = new Holder();
    const c = h.arena.classes[h.arena.classOf(64)]!;
    const owners = Array.from({ length: c.perPage }, () => h.add(64)); // exactly one full page
    const held = h.arena.pageBytes;
    expect(held).toBe(c.pageBytes);
    const second: Buffer[] = [];
    for (let i = 0; i < 1000; i++) {
      h.remove(h.add(64)); // crosses into a second page and back
      expect(h.arena.pageBytes).toBe(held + c.pageBytes);
      second.push(c.pages[1]!);
    }
    expect(second.every((p) => p === second[0])).toBe(true); // the same page all along
    // Half a page below the spare's start, the spare goes.
    const half = (c.perPage + 1) >> 1;
    for (let i = 0; i < half - 1; i++) h.remove(owners.pop()!);
    expect(h.arena.pageBytes).toBe(held + c.pageBytes);
    h.remove(owners.pop()!);
    expect(h.arena.pageBytes).toBe(held);
    expect((second[0]!.buffer as ArrayBuffer).detached).toBe(true);
    for (const o of owners) h.remove(o);
    h.verify();
  });

  it('on a source that releases pages, gives back a page as soon as it is empty, keeps one per class for its next page, frees the others', () => {
    const released: ArrayBuffer[] = [];
    const pageSource = { alloc: (bytes: number) => new ArrayBuffer(bytes), release: (page: ArrayBuffer) => released.push(page) > 0, close: async () => {} };
    const arena = new RecordArena(1 << 30, { pageSource });
    const cls = arena.classOf(64);
    const c = arena.classes[cls]!;
    expect(c.spareBound).toBe(c.perPage);
    const chunks = Array.from({ length: 3 * c.perPage }, (_, owner) => arena.alloc(cls, owner, 64));
    const pages = [...c.pages];
    // One chunk off the third page: it still holds records.
    arena.free(cls, chunks.pop()!);
    expect(c.pages.length).toBe(3);
    // Its last chunk gone, the third page goes: released and kept.
    for (let i = 2; i < c.perPage; i++) arena.free(cls, chunks.pop()!);
    expect(c.pages.length).toBe(3);
    arena.free(cls, chunks.pop()!);
    expect(c.pages.length).toBe(2);
    expect(released).toEqual([pages[2]!.buffer]);
    expect(c.emptied?.page).toBe(pages[2]);
    expect(arena.pageBytes).toBe(2 * c.pageBytes);
    // The second page empties too: a class keeps one, so this one is freed.
    for (let i = 0; i < c.perPage; i++) arena.free(cls, chunks.pop()!);
    expect(c.pages.length).toBe(1);
    expect((pages[1]!.buffer as ArrayBuffer).detached).toBe(true);
    expect(c.emptied?.page).toBe(pages[2]);
    // The next page the class needs is the kept one, with its views.
    for (let i = 0; i < c.perPage; i++) chunks.push(arena.alloc(cls, chunks.length, 64));
    expect(c.pages).toEqual([pages[0], pages[2]]);
    expect(c.words[1]!.buffer).toBe(pages[2]!.buffer);
    expect(c.emptied).toBeNull();
    expect(arena.verify((owner, k, chunk) => k === cls && chunks[owner] === chunk)).toBe(chunks.length);
    // Large records never go through it.
    arena.free(arena.large, arena.alloc(arena.large, 0, 100_000));
    expect(released).toHaveLength(1);
  });

  it("on a source that releases ranges, gives back the free end of a class's last page as its records leave, never a live byte", () => {
    const OS_PAGE = 4096;
    const released: [number, number][] = [];
    // As madvise(MADV_DONTNEED) would: the OS pages wholly within [from, to) read as zeros after.
    const releaseRange = (page: ArrayBuffer, from: number, to: number): boolean => {
      const start = Math.ceil(from / OS_PAGE) * OS_PAGE;
      const end = Math.floor(to / OS_PAGE) * OS_PAGE;
      if (end > start) {
        new Uint8Array(page, start, end - start).fill(0);
        released.push([start, end]);
      }
      return true;
    };
    const release = (page: ArrayBuffer): boolean => releaseRange(page, 0, page.byteLength);
    const arena = new RecordArena(1 << 30, { pageSource: { alloc: (bytes) => new ArrayBuffer(bytes), release, releaseRange, close: async () => {} } });

    // One page of 20,000-byte records, emptied from its end down to one record.
    const cls = arena.classOf(20_000);
    const c = arena.classes[cls]!;
    expect(c.perPage).toBeGreaterThan(2);
    const chunks = Array.from({ length: c.perPage }, (_, owner) => arena.alloc(cls, owner, 20_000));
    for (const chunk of chunks) c.pageOf(chunk).fill(0xee, c.offsetOf(chunk), c.offsetOf(chunk) + c.size);
    for (let left = c.perPage - 1; left >= 1; left--) {
      arena.free(cls, chunks.pop()!);
      // Nothing below the first free chunk and the page kept past it is released.
      for (const [from] of released) expect(from).toBeGreaterThanOrEqual(left * c.size + OS_PAGE);
    }
    expect(released.length).toBeGreaterThan(0);
    expect(Math.max(...released.map(([, to]) => to))).toBe(Math.floor(c.pageBytes / OS_PAGE) * OS_PAGE);
    expect(c.pages[0]!.subarray(0, c.size).every((b) => b === 0xee)).toBe(true);
    // The page counts whole in the footprint: its end is free memory, not a smaller page.
    expect(arena.pageBytes).toBe(c.pageBytes);
    arena.free(cls, chunks.pop()!);

    // A churn of records of many sizes over classes with one to many chunks a page: every
    // byte of every live record reads back as written.
    const next = rng(41);
    const live = new Map<number, [number, number, number]>(); // owner → [cls, chunk, bytes]
    const sizes = [40, 300, 1_500, 5_000, 9_000, 20_000, 33_000, 60_000];
    const check = (owner: number): boolean => {
      const [k, chunk, bytes] = live.get(owner)!;
      const kc = arena.classes[k]!;
      const at = kc.offsetOf(chunk);
      return kc.pageOf(chunk).subarray(at, at + bytes).every((b) => b === (owner & 0xff));
    };
    let owner = 1000;
    released.length = 0;
    for (let op = 0; op < 30_000; op++) {
      if (live.size < 400 && (live.size === 0 || next(100) < 52)) {
        const bytes = sizes[next(sizes.length)]! - next(30);
        const k = arena.classOf(bytes);
        const chunk = arena.alloc(k, ++owner, bytes);
        const kc = arena.classes[k]!;
        kc.pageOf(chunk).fill(owner & 0xff, kc.offsetOf(chunk), kc.offsetOf(chunk) + bytes);
        live.set(owner, [k, chunk, bytes]);
      } else {
        const victims = [...live.keys()];
        const victim = victims[next(victims.length)]!;
        const [k, chunk] = live.get(victim)!;
        live.delete(victim);
        const moved = arena.free(k, chunk);
        if (moved !== -1) live.get(moved)![1] = chunk;
      }
    }
    expect(released.length).toBeGreaterThan(100);
    expect([...live.keys()].filter((o) => !check(o))).toEqual([]);
    // Freed while idle too: every class's free end past what it keeps.
    for (const o of live.keys()) expect(check(o)).toBe(true);
    arena.releaseSparePages();
    expect([...live.keys()].filter((o) => !check(o))).toEqual([]);
    expect(arena.verify((o, k, chunk) => live.get(o)?.[0] === k && live.get(o)?.[1] === chunk)).toBe(live.size);
  });

  it('gives the spare pages back when asked (a store standing idle), and only pages no record uses', () => {
    const h = new Holder();
    const c = h.arena.classes[h.arena.classOf(64)]!;
    const d = h.arena.classes[h.arena.classOf(9000)]!;
    const kept = Array.from({ length: c.perPage + 1 }, () => h.add(64)); // one page and one chunk of the next
    const gone = Array.from({ length: 2 * d.perPage }, () => h.add(9000));
    for (const o of gone) h.remove(o);
    expect(d.count).toBe(0);
    expect(d.pages.length).toBe(1); // the spare an emptied class keeps
    const spare = d.pages[0]!;
    const before = h.arena.pageBytes;
    expect(h.arena.releaseSparePages()).toBe(d.pageBytes);
    expect(h.arena.pageBytes).toBe(before - d.pageBytes);
    expect((spare.buffer as ArrayBuffer).detached).toBe(true);
    expect(c.pages.length).toBe(2); // both pages of the other class hold records
    expect(h.arena.releaseSparePages()).toBe(0);
    h.verify();
    // The records left read back as written, and the emptied class takes a page again.
    for (const o of kept) h.remove(o);
    h.add(9000);
    expect(d.pages.length).toBe(1);
    h.verify();
  });

  it('pages hold a power of two chunks, at least the page target: about 8,192 pages fill the arena, from 64 KiB to 4 MiB', () => {
    expect(arenaPageTarget(1)).toBe(MIN_PAGE_TARGET);
    expect(arenaPageTarget(256 * 2 ** 20)).toBe(64 * 1024);
    expect(arenaPageTarget(2 ** 30)).toBe(128 * 1024);
    expect(arenaPageTarget(2 ** 30 + 1)).toBe(256 * 1024);
    expect(arenaPageTarget(2 ** 40)).toBe(4 * 2 ** 20);
    for (const target of [MIN_PAGE_TARGET, 2 ** 20]) {
      const arena = new RecordArena(2 ** 30, { pageTarget: target });
      for (const c of arena.classes.slice(0, arena.large)) {
        expect(c.perPage).toBe(1 << c.shift);
        expect(c.pageBytes).toBe(c.size * c.perPage);
        expect(c.pageBytes).toBeGreaterThanOrEqual(target);
        expect(c.pageBytes).toBeLessThan(2 * target + 1); // the smallest power of two chunks that reaches it
        if (c.perPage > 1) expect(c.pageBytes / 2).toBeLessThan(target);
      }
      // The slack bound is what the classes hold unused at most: a page and a half each (two one-chunk pages).
      const slack = arena.classes.slice(0, arena.large).reduce((sum, c) => sum + (c.perPage + ((c.perPage + 1) >> 1)) * c.size, 0);
      expect(arenaSlackBytes(target)).toBe(slack);
      expect(arenaEmptyBytes(target)).toBe(arena.classes.slice(0, arena.large).reduce((sum, c) => sum + c.pageBytes, 0));
    }
    expect(() => new RecordArena(2 ** 30, { pageTarget: MIN_PAGE_TARGET - 1 })).toThrow(/pageTarget/);
    // The default cap's figure, which docs/limits-and-capacity.md gives.
    expect(arenaSlackBytes(arenaPageTarget(256 * 2 ** 20)) / 2 ** 20).toBeCloseTo(27, 0);
  });
});

describe('record arena address space', () => {
  it('reserves owner room in proportion to what it may hold, not to the most keys an engine may hold, and none for a class until its first record', () => {
    const maxBytes = 1 << 20;
    const arena = new RecordArena(maxBytes);
    expect(arena.classes.every((c) => c.ownerRegion.maxByteLength === 0 && c.ownerCap === 0)).toBe(true);
    expect(arena.footprintBytes).toBe(0);
    for (const [cls, c] of arena.classes.entries()) arena.free(cls, arena.alloc(cls, 0, c.size || LARGE_RECORD_BYTES + 1));
    let reserved = 0;
    for (const c of arena.classes) {
      // Room for every chunk the class could hold within maxBytes, twice over.
      expect(c.maxOwners).toBeGreaterThanOrEqual(Math.ceil(maxBytes / (c.size || LARGE_RECORD_BYTES)));
      expect(c.ownerRegion.maxByteLength).toBe(c.maxOwners * 4);
      reserved += c.ownerRegion.maxByteLength;
    }
    // About 10 times maxBytes over all classes (it was 512 MiB a class whatever the cap).
    expect(reserved).toBeLessThan(12 * maxBytes + (1 << 20));
  });
});

describe('engine footprint limit', () => {
  // Large enough that the arena's slack (about 20 MiB at this page target) leaves tiny values binding on the footprint first.
  const cap = 32 * 1024 * 1024;

  it('under lru, tiny values evict on the footprint before USAGE reaches the cap, and the footprint never passes its limit', () => {
    const engine = new KvEngine({ maxMemoryBytes: cap, evictionPolicy: 'lru' });
    expect(engine.footprintLimitBytes).toBe(1.25 * cap + arenaSlackBytes(arenaPageTarget(cap)) + (1 << 20));
    const value = b64('x');
    for (let i = 0; i < 1_500_000; i++) {
      expect(engine.set(`k${i}`, value)).toBe('ok');
      if (i % 100_000 === 0) expect(engine.footprintBytes).toBeLessThanOrEqual(engine.footprintLimitBytes);
    }
    engine.verifyInvariants(); // includes footprint <= limit
    expect(engine.footprintEvictions).toBeGreaterThan(0);
    expect(engine.evictions).toBeGreaterThanOrEqual(engine.footprintEvictions);
    expect(engine.usageBytes).toBeLessThan(cap / 2); // ~9 bytes of data per ~60 bytes held
    expect(engine.get('k1499999')).toBe(value); // the newest keys stay
  });

  it('under noeviction, a SET that would pass the footprint limit is refused and changes nothing; deleting makes room', () => {
    const engine = new KvEngine({ maxMemoryBytes: cap, evictionPolicy: 'noeviction' });
    let i = 0;
    while (engine.set(`k${i}`, b64('y')) === 'ok') i++;
    expect(engine.usageBytes).toBeLessThan(cap / 2); // refused on the footprint, not on USAGE
    const before = { keys: engine.keyCount, usage: engine.usageBytes, footprint: engine.footprintBytes };
    expect(engine.set(`k${i}`, b64('y'))).toBe('out_of_memory');
    expect(engine.get(`k${i}`)).toBeUndefined();
    expect({ keys: engine.keyCount, usage: engine.usageBytes, footprint: engine.footprintBytes }).toEqual(before);
    expect(engine.evictions).toBe(0);
    engine.verifyInvariants();
    // Keys as long as the refused one: their records free chunks of its size class.
    for (let k = i - 10_000; k < i; k++) engine.delete(`k${k}`);
    expect(engine.set(`k${i}`, b64('y'))).toBe('ok');
    engine.verifyInvariants();
  });

  it('churns values from 1 B to 64 KiB under the cap with the footprint within its limit, then gives it back when every key is deleted', () => {
    const engine = new KvEngine({ maxMemoryBytes: cap, evictionPolicy: 'lru' });
    const random = rng(11);
    const big = Buffer.alloc(64 * 1024, 'v');
    const keys = 2000;
    for (let op = 0; op < 20_000; op++) {
      const k = `key${random(keys)}`;
      if (random(10) === 0) engine.delete(k);
      else expect(engine.setBytes(k, big, 0, 1 + random(big.length))).toBe('ok');
    }
    engine.verifyInvariants();
    expect(engine.evictions).toBeGreaterThan(0);
    for (let k = 0; k < keys; k++) engine.delete(`key${k}`);
    engine.verifyInvariants();
    expect(engine.keyCount).toBe(0);
    expect(engine.arenaBytes).toBeLessThanOrEqual(arenaEmptyBytes(arenaPageTarget(cap))); // one spare page per class at most
  });
});

describe('memory metrics', () => {
  it('a store gives back the pages its deleted keys left: at once with the C add-on (which releases an emptied page), else its spares once idle', async () => {
    const addon = loadSocketIo();
    const releases = 'io' in addon && typeof addon.io.releasePage === 'function';
    const idleRelease = 'io' in addon && typeof addon.io.mallocTrim === 'function';
    const store = await startTestStore({ maxMemoryBytes: 64 * 1024 * 1024 }, { idleTrimMs: 50 });
    const c = await store.client();
    const sizes = [10, 300, 5000, 40_000, 100_000];
    for (let i = 0; i < 500; i++) expect(await c.request(`SET k${i} ${b64('v'.repeat(sizes[i % sizes.length]!))}`)).toBe('OK');
    for (let i = 0; i < 500; i++) expect(await c.request(`DELETE k${i}`)).toBe('OK');
    const engine = store.service.engine;
    if (releases) expect(engine.recordBytes).toBe(0); // every page went back as it emptied
    else expect(engine.recordBytes).toBeGreaterThan(0); // a spare page per class used
    if (idleRelease) await vi.waitUntil(() => engine.recordBytes === 0, { timeout: 10_000, interval: 50 });
    else expect(engine.recordBytes).toBeGreaterThan(0); // no idle trim without the add-on
    const e = parseExposition((await store.admin('/metrics')).body);
    expect(sampleValue(e, 'kvstore_memory_arena_bytes')).toBe(engine.arenaBytes);
    engine.verifyInvariants();
  });

  it.skipIf(process.platform !== 'linux')('a request to the admin port starts a new idle spell: its collection and trims run again', async () => {
    const addon = loadSocketIo();
    expect('io' in addon && typeof addon.io.mallocTrim === 'function', 'the native add-on with mallocTrim (npm ci builds it)').toBe(true);
    const store = await startTestStore({}, { idleTrimMs: 50 });
    // Read from the registry in this process, which is no request to the admin port.
    const trims = async (): Promise<number> => sampleValue(parseExposition(await store.service.registry.metrics()), 'kvstore_memory_malloc_trims_total')!;
    // The spell after start-up takes its trims, then none come while nothing happens.
    await vi.waitUntil(async () => (await trims()) >= 3, { timeout: 10_000, interval: 50 });
    const spent = await trims();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await trims()).toBe(spent);
    expect((await store.admin('/livez')).status).toBe(200);
    await vi.waitUntil(async () => (await trims()) > spent, { timeout: 10_000, interval: 50 });
  });

  it('exports the arena, the footprint and its limit, and footprint evictions', async () => {
    const store = await startTestStore({ maxMemoryBytes: 1_000_000 });
    const c = await store.client();
    expect(await c.request(`SET k ${'z'.repeat(5000)}`)).toBe('OK');
    const e = parseExposition((await store.admin('/metrics')).body);
    const engine = store.service.engine;
    expect(sampleValue(e, 'kvstore_memory_arena_bytes')).toBe(engine.arenaBytes);
    expect(engine.arenaBytes).toBeGreaterThanOrEqual(5001);
    expect(sampleValue(e, 'kvstore_memory_footprint_bytes')).toBe(engine.footprintBytes);
    expect(sampleValue(e, 'kvstore_memory_footprint_limit_bytes')).toBe(engine.footprintLimitBytes);
    expect(sampleValue(e, 'kvstore_memory_footprint_evictions_total')).toBe(0);
  });
});
