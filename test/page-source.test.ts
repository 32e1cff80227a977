// The record arena's page sources (services/store/engine/page-source.ts): pages the add-on
// maps are zeroed, their own memory, and leave the process once detached; pages from a
// thread of their own arrive whole, zeroed, usable and detachable on this thread; a source
// whose thread is gone falls back to this thread's pages instead of waiting or failing.
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { MappedPageSource, THIS_THREAD_PAGES, ThreadPageSource } from '../services/store/engine/page-source.ts';
import { loadSocketIo } from '../services/store/network/native-io.ts';
import { RecordArena } from '../services/store/engine/record-arena.ts';
import type { EngineStats } from '../services/store/engine/engine-api.ts';
import { createStoreMetrics } from '../services/store/store-metrics.ts';
import { parseExposition, sampleValue } from '../bench/harness/exposition.ts';

const sources: ThreadPageSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.close()));
});
const threadSource = (): ThreadPageSource => {
  const s = new ThreadPageSource();
  sources.push(s);
  return s;
};

describe('page sources', () => {
  it("this thread's pages are zeroed buffers of the size asked for", () => {
    const page = THIS_THREAD_PAGES.alloc(65536);
    expect(page.byteLength).toBe(65536);
    expect(new Uint8Array(page).every((b) => b === 0)).toBe(true);
  });

  // The add-on is built by npm ci on Linux (the store falls back to the page thread without it).
  const addon = loadSocketIo();
  const mapPage = 'io' in addon ? addon.io.mapPage?.bind(addon.io) : undefined;
  const residentMiB = (): number => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

  it.skipIf(process.platform !== 'linux')("the add-on's pages are zeroed mappings of their own, resident once written and gone once detached", async () => {
    expect(mapPage, 'the native add-on with mapPage (npm ci builds it)').toBeTypeOf('function');
    const source = new MappedPageSource(mapPage!);
    const bytes = 16 << 20;
    const before = residentMiB();
    const pages = Array.from({ length: 4 }, () => source.alloc(bytes));
    expect(pages.map((p) => p.byteLength)).toEqual([bytes, bytes, bytes, bytes]);
    // Address space only, until written.
    expect(residentMiB() - before).toBeLessThan(16);
    for (const [i, page] of pages.entries()) {
      const view = new Uint8Array(page);
      expect(view[0] === 0 && view[bytes - 1] === 0 && view.every((b) => b === 0)).toBe(true);
      view.fill(i + 1);
    }
    expect(pages.map((p) => new Uint8Array(p)[bytes - 1])).toEqual([1, 2, 3, 4]);
    const written = residentMiB();
    expect(written - before).toBeGreaterThan(56);
    for (const page of pages) page.transfer(0);
    // Node unmaps a detached page's memory on its next turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(written - residentMiB()).toBeGreaterThan(56);
    expect(() => mapPage!(0)).toThrow(/positive size/);
    await source.close();
  });

  it.skipIf(process.platform !== 'linux')('an arena on mapped pages stores and gives back records as on this thread', () => {
    const arena = new RecordArena(1 << 26, { pageSource: new MappedPageSource(mapPage!) });
    const cls = arena.classOf(100);
    const c = arena.classes[cls]!;
    const chunks = Array.from({ length: 3 * c.perPage }, (_, owner) => arena.alloc(cls, owner, 100));
    expect(c.pages.length).toBe(3);
    for (const [owner, chunk] of chunks.entries()) c.write(chunk, 0, Buffer.alloc(100, owner & 0xff), 0, 100);
    expect(chunks.every((chunk, owner) => c.pageOf(chunk)[c.offsetOf(chunk) + 99] === (owner & 0xff))).toBe(true);
    expect(arena.verify((owner, k, chunk) => k === cls && chunks[owner] === chunk)).toBe(chunks.length);
    const pages = [...c.pages];
    for (let owner = chunks.length - 1; owner >= 0; owner--) arena.free(cls, chunks[owner]!);
    // The first page stays as the class's spare; the others were detached, which unmaps them.
    expect(pages.map((p) => (p.buffer as ArrayBuffer).detached)).toEqual([false, true, true]);
    arena.free(arena.large, arena.alloc(arena.large, 0, 100_000));
  });

  const releasePage = 'io' in addon ? addon.io.releasePage?.bind(addon.io) : undefined;

  it.skipIf(process.platform !== 'linux')("a released page's memory leaves at once, and the page stays usable, reading as zeros", () => {
    expect(releasePage, 'the native add-on with releasePage (npm ci builds it)').toBeTypeOf('function');
    const source = new MappedPageSource(mapPage!, releasePage);
    const bytes = 64 << 20;
    const page = source.alloc(bytes);
    const view = new Uint8Array(page);
    view.fill(7);
    const written = residentMiB();
    expect(source.release!(page)).toBe(true);
    // At once: no turn, no collection.
    expect(written - residentMiB()).toBeGreaterThan(56);
    expect(page.detached).toBe(false);
    expect(view[0] === 0 && view[bytes - 1] === 0 && view.every((b) => b === 0)).toBe(true);
    view.fill(9, 0, 4096);
    expect(view[4095]).toBe(9);
    page.transfer(0);
    expect(() => releasePage!(42 as never)).toThrow(/ArrayBuffer/);
  });

  const releaseRange = 'io' in addon ? addon.io.releaseRange?.bind(addon.io) : undefined;

  it.skipIf(process.platform !== 'linux')("a released range's whole OS pages leave at once; the bytes around them stay", () => {
    expect(releaseRange, 'the native add-on with releaseRange (npm ci builds it)').toBeTypeOf('function');
    const source = new MappedPageSource(mapPage!, releasePage, releaseRange);
    const bytes = 64 << 20;
    const page = source.alloc(bytes);
    const view = new Uint8Array(page);
    view.fill(7);
    const written = residentMiB();
    // From mid-way into an OS page to mid-way into another: only the pages wholly inside go.
    const from = 1000;
    const to = bytes - 1000;
    expect(source.releaseRange!(page, from, to)).toBe(true);
    expect(written - residentMiB()).toBeGreaterThan(56);
    expect(view.subarray(0, 4096).every((b) => b === 7)).toBe(true);
    expect(view.subarray(bytes - 4096).every((b) => b === 7)).toBe(true);
    expect(view.subarray(4096, bytes - 4096).every((b) => b === 0)).toBe(true);
    // A range within one OS page releases nothing.
    view.fill(5, 8192, 12288);
    expect(source.releaseRange!(page, 8200, 12000)).toBe(true);
    expect(view.subarray(8192, 12288).every((b) => b === 5)).toBe(true);
    expect(() => releaseRange!(page, 10, 5)).toThrow(RangeError);
    expect(() => releaseRange!(page, 0, bytes + 1)).toThrow(RangeError);
    expect(() => releaseRange!(42 as never, 0, 1)).toThrow(/ArrayBuffer/);
    page.transfer(0);
  });

  it.skipIf(process.platform !== 'linux')('an arena on pages that are released keeps an emptied page for its class, holding no memory, and maps no new one at the edge', () => {
    const source = new MappedPageSource(mapPage!, releasePage);
    const arena = new RecordArena(1 << 26, { pageSource: source });
    const cls = arena.classOf(4000);
    const c = arena.classes[cls]!;
    const fill = (chunk: number, byte: number): void => c.write(chunk, 0, Buffer.alloc(4000, byte), 0, 4000);
    const chunks = Array.from({ length: c.perPage + 1 }, (_, owner) => arena.alloc(cls, owner, 4000));
    for (const chunk of chunks) fill(chunk, 0xaa);
    const second = c.pages[1]!;
    // The second page empties: it leaves the count and its memory goes back, but it stays mapped for the next.
    arena.free(cls, chunks.pop()!);
    expect(c.pages.length).toBe(1);
    expect(arena.pageBytes).toBe(c.pageBytes);
    expect(c.emptied?.page).toBe(second);
    expect((second.buffer as ArrayBuffer).detached).toBe(false);
    expect(second.every((b) => b === 0)).toBe(true);
    // Across the edge and back a thousand times: the same page every time.
    for (let i = 0; i < 1000; i++) {
      const chunk = arena.alloc(cls, 1000 + i, 4000);
      expect(c.pageOf(chunk)).toBe(second);
      fill(chunk, i & 0xff);
      arena.free(cls, chunk);
    }
    expect(arena.pageBytes).toBe(c.pageBytes);
    // An idle store's release unmaps it.
    arena.releaseSparePages();
    expect(c.emptied).toBeNull();
    expect((second.buffer as ArrayBuffer).detached).toBe(true);
    expect(arena.verify((owner, k, chunk) => k === cls && chunks[owner] === chunk)).toBe(chunks.length);
  });

  it("a thread's pages arrive whole and zeroed, one per call, and are this thread's to write and detach", async () => {
    const source = threadSource();
    await source.ready();
    const pages = [65536, 131072, 65536, 1 << 20].map((bytes) => source.alloc(bytes));
    expect(source.threaded).toBe(true);
    expect(pages.map((p) => p.byteLength)).toEqual([65536, 131072, 65536, 1 << 20]);
    expect(new Set(pages).size).toBe(4);
    for (const [i, page] of pages.entries()) {
      const view = new Uint8Array(page);
      expect(view.every((b) => b === 0)).toBe(true);
      view.fill(i + 1);
    }
    // Each is its own memory: writing one left the others as they were.
    expect(pages.map((p) => new Uint8Array(p)[p.byteLength - 1])).toEqual([1, 2, 3, 4]);
    pages[1]!.transfer(0);
    expect(pages[1]!.detached).toBe(true);
    expect(new Uint8Array(pages[2]!)[0]).toBe(3);
  });

  it("a size asked for again has its next page received ahead, handed out without a wait; a size asked for once has none", async () => {
    const source = threadSource();
    await source.ready();
    const first = source.alloc(65536, true);
    // Answers come in the order asked: once a page asked for after it is here, so is the one ahead.
    source.alloc(4096);
    expect(source.pagesAhead).toBe(1);
    const second = source.alloc(65536, true);
    expect(second).not.toBe(first);
    expect(second.byteLength).toBe(65536);
    expect(new Uint8Array(second).every((b) => b === 0)).toBe(true);
    source.alloc(131072); // asked for once: nothing ahead of its size
    expect(source.pagesAhead).toBe(1); // the next 64 KiB page, asked for when the second was taken
    await source.close();
    expect(source.pagesAhead).toBe(0); // unmapped, not left to the collector
  });

  it('an arena on a thread source stores and gives back records as on this thread', async () => {
    const source = threadSource();
    await source.ready();
    const arena = new RecordArena(1 << 26, { pageSource: source });
    const cls = arena.classOf(100);
    const c = arena.classes[cls]!;
    const chunks = Array.from({ length: 3 * c.perPage }, (_, owner) => arena.alloc(cls, owner, 100));
    expect(c.pages.length).toBe(3);
    expect(arena.verify((owner, k, chunk) => k === cls && chunks[owner] === chunk)).toBe(chunks.length);
    const pages = [...c.pages];
    for (let owner = chunks.length - 1; owner >= 0; owner--) arena.free(cls, chunks[owner]!);
    // The first page stays as the class's spare; the others were detached, which unmaps them.
    expect(pages.map((p) => (p.buffer as ArrayBuffer).detached)).toEqual([false, true, true]);
    expect(source.threaded).toBe(true);
    // A class's pages are asked for again (one ahead); a large record's buffer is not.
    arena.free(arena.large, arena.alloc(arena.large, 0, 100_000));
    arena.alloc(arena.classOf(2000), 0, 2000); // its class's first page, waited for; the next asked for ahead
    source.alloc(4096); // answered after that one
    expect(source.pagesAhead).toBe(2); // one of each class used, none for the large record
  });

  it('a page the thread cannot allocate throws as on this thread, and the thread stays', async () => {
    const said: string[] = [];
    const source = new ThreadPageSource({ onFallback: (why) => said.push(why) });
    sources.push(source);
    await source.ready();
    expect(() => source.alloc(2 ** 40)).toThrow(RangeError);
    expect(source.threaded).toBe(true);
    expect(source.alloc(65536).byteLength).toBe(65536);
    expect(said).toEqual([]);
  });

  it('says once why it falls back when a page is late, then gives pages from this thread; nothing when closed', async () => {
    const said: string[] = [];
    // No wait at all: every answer is late.
    const source = new ThreadPageSource({ onFallback: (why) => said.push(why), roundTripLimitMs: 0 });
    sources.push(source);
    await source.ready();
    expect(source.fellBack).toBe(false);
    // (An answer can only beat a wait of 0 ms if the thread answers before the caller
    // waits, nanoseconds after asking; the loop makes that race irrelevant.)
    for (let i = 0; i < 100 && source.threaded; i++) expect(source.alloc(65536).byteLength).toBe(65536);
    expect(source.threaded).toBe(false);
    expect(source.fellBack).toBe(true); // what kvstore_memory_arena_page_thread_fallbacks_total reads
    expect(source.alloc(131072).byteLength).toBe(131072);
    await source.close();
    expect(said).toEqual(['a page of 65536 bytes took over 0 ms']);

    const quiet: string[] = [];
    const closed = new ThreadPageSource({ onFallback: (why) => quiet.push(why) });
    await closed.ready();
    await closed.close();
    expect(closed.alloc(4096).byteLength).toBe(4096);
    expect(quiet).toEqual([]);
    expect(closed.fellBack).toBe(false); // closing is not falling back
  });

  it("the store's metrics show where pages come from and whether the thread was given up", async () => {
    const engine = Object.fromEntries(
      ['usageBytes', 'keyCount', 'maxMemoryBytes', 'evictions', 'footprintEvictions', 'arenaBytes', 'footprintBytes', 'footprintLimitBytes', 'expired', 'hits', 'misses', 'expiryBacklog'].map((k) => [k, 0]),
    ) as unknown as EngineStats;
    const read = async (arenaPages?: ThreadPageSource) => {
      const registry = new Registry();
      createStoreMetrics({ registry, engine, connections: () => 0, maxConnections: 1, arenaPages });
      const e = parseExposition(await registry.metrics());
      return [sampleValue(e, 'kvstore_memory_arena_pages_threaded'), sampleValue(e, 'kvstore_memory_arena_page_thread_fallbacks_total')];
    };
    const source = new ThreadPageSource({ roundTripLimitMs: 0 });
    sources.push(source);
    await source.ready();
    expect(await read(source)).toEqual([1, 0]);
    for (let i = 0; i < 100 && source.threaded; i++) source.alloc(65536);
    expect(await read(source)).toEqual([0, 1]);
    expect(await read(undefined)).toEqual([0, 0]); // no thread from the start (not glibc)
  });

  it('once its thread is gone, a source gives pages from this thread', async () => {
    const source = threadSource();
    await source.ready();
    await source.close();
    expect(source.threaded).toBe(false);
    const page = source.alloc(65536);
    expect(page.byteLength).toBe(65536);
    expect(new Uint8Array(page).every((b) => b === 0)).toBe(true);
  });
});
