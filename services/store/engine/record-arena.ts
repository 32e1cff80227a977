// Where the store's bytes live: every entry's key and value, side by side, in memory
// outside the JavaScript heap that the arena gives back to the OS as soon as the records
// leave.
//
// Why: a million keys held as JS strings cost V8 object headers, a Map entry each, and
// heap slack that the garbage collector keeps after a bulk load (~320 bytes of RSS per
// 100-byte entry, where Redis takes ~210: docs/benchmarks.md#memory-per-key). Records in raw memory cost their bytes
// plus size-class rounding, and the collector never walks them.
//
// Layout. A record of n bytes goes to the smallest size class that fits it: multiples of
// 4 bytes up to 256 (the rounding of a 100-byte value with its key costs at most 3 bytes,
// where steps of 8 cost up to 7: 4 bytes of RSS per key on average, see
// docs/benchmarks.md#memory-per-key), then steps of about 4% up to
// LARGE_RECORD_BYTES. A class holds its records densely, as chunks 0..count-1: chunk i is
// in page i >> shift, at byte (i & mask) * size. Freeing chunk i moves the class's last
// chunk into its place (one copy of at most LARGE_RECORD_BYTES), so a class never has
// holes and needs no compaction.
//
// Memory. A page is a plain ArrayBuffer of a power of two chunks, at least the arena's page
// target (64 KiB to 4 MiB, by the cap: see arenaPageTarget). Plain, not resizable: V8 loads
// from a view over a resizable buffer about twice as slowly (it re-checks the length), and
// the records are read on every GET: with plain pages a GET's value is encoded to base64 in
// JavaScript (up to 512 bytes: services/protocol/replies.ts), which makes the store faster
// at pipeline depth 16 (docs/benchmarks.md#where-a-commands-cpu-goes). Node allocates a page
// with malloc; the store runs with glibc's mmap threshold fixed below the smallest page
// (runtime/malloc-tuning.ts), so each page is mapped on its own, its memory committed as records
// fill it, and unmapped the moment it is freed, without the garbage collector and without
// malloc keeping holes. A class takes a page when its pages are full. It gives its last
// one back as soon as the page is empty when the page source can release a page in place
// (the add-on's releasePage: the memory leaves at once, the mapping stays), and keeps that
// page, one per class, for its next one: a SET/DELETE at a page edge maps and unmaps
// nothing and makes no new page or views, and an empty page holds no memory (under churn
// at a 64 MiB cap that page is ~7 MiB of RSS a store no longer holds:
// docs/benchmarks.md#memory-under-churn). Other sources keep a spare page instead: the last
// page goes once a page and a half is unused. The page target bounds how many mappings the
// arena makes (about 8,000 at the cap), which the kernel limits (vm.max_map_count, 65,530
// by default), and what a class holds unused (under 1.5 pages).
//
// Records larger than LARGE_RECORD_BYTES get a buffer of exactly their size each (class
// LARGE), freed (detached, which unmaps it) when the record goes; freeing one moves the
// last buffer reference instead of copying bytes.
//
// Memory held is therefore the live records, their rounding (at most ~4%, or 3 bytes),
// and under 1.5 pages per class in use (arenaSlackBytes; under one page with a source that
// releases pages): footprintBytes, which the engine
// holds under a limit derived from its memory cap.
//
// The arena knows nothing of keys. Each chunk records its owner (the engine's slot
// number); when a free moves a chunk, `free` returns the owner of the moved chunk so the
// engine can update where that entry lives. A page leaves the arena only as the view a GET
// reads its value through (the engine's getAt), for the length of that read: a record may
// move, and a page may be freed, at the next change.

import { NATIVE_COPY_BYTES } from './copy-bytes.ts';
import { THIS_THREAD_PAGES, type PageSource } from './page-source.ts';
import { resizableBuffer } from './resizable-buffer.ts';
import { freeNow } from '../../shared/free-now.ts';

/** Records above this get a buffer of their own, of exactly their size. */
export const LARGE_RECORD_BYTES = 64 * 1024;
/**
 * Bounds of the page target (see arenaPageTarget). The store fixes glibc's mmap threshold
 * at the smallest (runtime/malloc-tuning.ts), so every page is mapped on its own.
 */
export const MIN_PAGE_TARGET = 64 * 1024;
const MAX_PAGE_TARGET = 4 * 1024 * 1024;
/** Pages a full arena is made of, about (the target is the arena's bytes over this). */
const PAGES_AT_CAP = 8192;
const OS_PAGE = 4096;
/**
 * The free end of a class's last page is released once this many bytes of it past the
 * first free chunk are resident, all but TAIL_KEPT of them: records coming and going at the
 * edge then fault in no more than that, and a release is one system call per 8 KiB at least.
 */
const TAIL_RELEASE_BYTES = 3 * OS_PAGE;
const TAIL_KEPT = OS_PAGE;

const roundUp = (n: number, to: number): number => Math.ceil(n / to) * to;

/**
 * The smallest page for an arena of `maxBytes`: about maxBytes / 8192, a power of two
 * from 64 KiB to 4 MiB. So the arena makes about 8,000 mappings when full (far under the
 * kernel's 65,530) whatever the cap, and a small cap keeps small pages.
 */
export function arenaPageTarget(maxBytes: number): number {
  let target = MIN_PAGE_TARGET;
  while (target < MAX_PAGE_TARGET && target * PAGES_AT_CAP < maxBytes) target *= 2;
  return target;
}

// Records start at multiples of 4, so they can be read and written as aligned 32-bit
// words, a quarter of the loads; word order is the platform's.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * An empty array that holds objects from the start (V8's elements kind for objects): an
 * empty literal starts out for small integers and changes kind at its first push, and code
 * V8 optimised on arrays that had changed already was thrown away at a fresh arena's first
 * page of each size (the real engine's, right after the warm-up's arena: its first writes).
 */
function objectArray<T extends object>(): T[] {
  const array: (T | null)[] = [null];
  array.pop();
  return array as T[];
}

const INITIAL_OWNERS = 16;
/** One owner per key at most: the engine's MAX_KEYS. */
const MAX_OWNERS = 2 ** 27;
/** Owners added per growth once past it (256 KiB committed a step); doubling below. */
const OWNER_GROWTH = 65_536;
const ownersAfterGrowth = (cap: number, max: number): number => Math.min(max, cap === 0 ? INITIAL_OWNERS : cap < OWNER_GROWTH ? cap * 2 : cap + OWNER_GROWTH);

/**
 * The owner region of every class that has held no record yet: it reserves nothing. A class
 * reserves its own at its first record (SizeClass.growOwners). Most of a store's ~200
 * classes never hold one, and each reservation is a mapping or two: the kernel's limit on
 * mappings (vm.max_map_count) is shared with the pages, and a test process that made a few
 * hundred stores before the collector freed the old ones ran out of it. Resizable like the
 * others, so that every class's owners are the same kind of typed array to V8.
 */
const NO_OWNERS = resizableBuffer(0, 0);

export class SizeClass {
  /** Chunk size in bytes; 0 for the class of large records (each its own buffer). */
  readonly size: number;
  /** Chunk i is in pages[i >>> shift] at byte (i & mask) * size: pages of 2^shift chunks for a size class, one per record for LARGE. */
  readonly shift: number;
  readonly mask: number;
  /** Chunks a page holds (1 << shift), and its bytes; 1 and 0 for LARGE. */
  readonly perPage: number;
  readonly pageBytes: number;
  readonly pages: Buffer[] = objectArray();
  /** The same memory as pages, as 32-bit words (see LITTLE_ENDIAN above). */
  readonly words: Int32Array[] = objectArray();
  /** The same memory as pages, as DataViews: what a GET's reply reads its value through (getAt). */
  readonly views: DataView[] = objectArray();
  /** Chunks in use: 0..count-1. */
  count = 0;
  /**
   * Unused chunks at which the class gives back its last page: a page when the page source
   * can release a page's memory and keep its mapping (the emptied page waits below for the
   * class's next one), else a page and a half (a spare page kept, so records coming and
   * going at a page's edge do not map and unmap a page each time).
   */
  readonly spareBound: number;
  /** The class's last page given back, its memory released and its mapping kept (with its views), for its next page; null when none. */
  emptied: { page: Buffer; words: Int32Array; view: DataView } | null = null;
  /** Bytes at the start of the last page that may be resident: records written since it came or its end was last released (releaseTail); none after. */
  residentEnd = 0;
  /**
   * Most chunks the class can hold: the arena never holds more than its maxBytes, so
   * never more than maxBytes / size of them (and never more than the engine's keys).
   */
  readonly maxOwners: number;
  /**
   * Chunk → owner (the engine's slot), over a resizable buffer that reserves room for
   * maxOwners from the class's first record (NO_OWNERS before): it grows and shrinks in
   * place, never copied (a copy of millions of owners in one allocation was the last
   * stop-the-world growth). The reservation is address space, not memory, but it adds up:
   * at one owner per key the engine can hold it was 512 MiB a class, 78 GiB an arena, and
   * tests that make hundreds of engines ran out of address space before the collector freed
   * the old ones.
   */
  ownerRegion: ArrayBuffer = NO_OWNERS;
  owners: Int32Array = new Int32Array(NO_OWNERS);
  /** owners.length, kept here: a resizable buffer's length is slower to read. */
  ownerCap = 0;

  /** `maxBytes`: the most the arena holds (see RecordArena); `pageTarget`: its smallest page; `releases`: whether its page source releases pages. */
  constructor(size: number, maxBytes: number, pageTarget: number, releases: boolean) {
    this.size = size;
    const shift = size > 0 ? pageShift(size, pageTarget) : 0;
    this.shift = shift;
    this.mask = (1 << shift) - 1;
    this.perPage = 1 << shift;
    this.pageBytes = size << shift;
    this.spareBound = releases ? this.perPage : unusedChunksBound(this.perPage);
    // A large record takes more than LARGE_RECORD_BYTES. Twice that, for headroom: an
    // overwrite holds its old chunk and its new one for a moment.
    const chunks = Math.ceil(maxBytes / (size > 0 ? size : LARGE_RECORD_BYTES));
    this.maxOwners = Math.min(MAX_OWNERS, Math.max(INITIAL_OWNERS, 2 * chunks + 64));
  }

  /** Gives the owner array room for `n` owners: the class's reservation at its first record, then in place. */
  growOwners(n: number): void {
    if (this.ownerRegion === NO_OWNERS) {
      this.ownerRegion = resizableBuffer(n * 4, this.maxOwners * 4);
      this.owners = new Int32Array(this.ownerRegion);
    } else {
      this.ownerRegion.resize(n * 4);
    }
    this.ownerCap = n;
  }

  /** The page holding chunk i. */
  pageOf(i: number): Buffer {
    return this.pages[i >>> this.shift]!;
  }

  /** A view of the page holding chunk i. */
  viewOf(i: number): DataView {
    return this.views[i >>> this.shift]!;
  }

  /** Where chunk i starts in its page. */
  offsetOf(i: number): number {
    return (i & this.mask) * this.size;
  }

  /** True when the record in chunk i starts with the bytes [start, end) of `key` (a view of the key's buffer). */
  startsWith(i: number, key: DataView, start: number, end: number): boolean {
    const page = this.pages[i >>> this.shift]!;
    const at = (i & this.mask) * this.size;
    let k = start;
    if (LITTLE_ENDIAN) {
      const words = this.words[i >>> this.shift]!;
      let w = at >>> 2;
      for (const whole = start + ((end - start) & ~3); k < whole; k += 4, w++) if (words[w] !== key.getInt32(k, true)) return false;
    }
    for (let b = at + k - start; k < end; k++, b++) if (page[b] !== key.getUint8(k)) return false;
    return true;
  }

  /** Copies src[start, end) into chunk i at byte `offset` of the record. */
  write(i: number, offset: number, src: Buffer, start: number, end: number): void {
    const page = this.pages[i >>> this.shift]!;
    let at = (i & this.mask) * this.size + offset;
    if (end - start > NATIVE_COPY_BYTES) {
      src.copy(page, at, start, end);
      return;
    }
    let k = start;
    if (LITTLE_ENDIAN) {
      for (; k < end && (at & 3) !== 0; k++) page[at++] = src[k]!;
      const words = this.words[i >>> this.shift]!;
      for (let w = at >>> 2; k + 4 <= end; k += 4, w++, at += 4) {
        words[w] = src[k]! | (src[k + 1]! << 8) | (src[k + 2]! << 16) | (src[k + 3]! << 24);
      }
    }
    for (; k < end; k++) page[at++] = src[k]!;
  }

  /** Bytes this class holds for its records. */
  get heldBytes(): number {
    return this.size > 0 ? this.pages.length * this.pageBytes : this.pages.reduce((sum, p) => sum + largeBytes(p.length), 0);
  }

  /** Whether the last page goes: spareBound chunks unused. */
  get lastPageSpare(): boolean {
    return this.pages.length * this.perPage - this.count >= this.spareBound;
  }
}

/**
 * Above 256 bytes each class is this much larger than the one before (rounded up to 8
 * bytes). A record wastes half a step on average: at 6% steps, values of 1 B to 64 KiB took
 * 2 MiB more than their 64 MiB at the cap. Finer steps make more classes, each with a partly
 * used last page, but that page's free end is released (releaseTail) and holds little;
 * 199 classes in all, under the 255 a slot can name.
 */
const CLASS_STEP = 1.04;

/** Class sizes: 4, 8, ..., 256, then CLASS_STEP steps rounded up to 8 bytes, to LARGE_RECORD_BYTES. */
function classSizes(): number[] {
  if (cachedSizes !== undefined) return cachedSizes;
  const sizes: number[] = [];
  for (let s = 4; s <= 256; s += 4) sizes.push(s);
  let s = 256;
  while (s < LARGE_RECORD_BYTES) {
    s = Math.min(LARGE_RECORD_BYTES, Math.ceil((s * CLASS_STEP) / 8) * 8);
    sizes.push(s);
  }
  return (cachedSizes = sizes);
}
let cachedSizes: number[] | undefined;

/** A page of class `size` holds 2^pageShift chunks: the fewest that reach the page target. */
function pageShift(size: number, pageTarget: number): number {
  let shift = 0;
  while (size << shift < pageTarget) shift++;
  return shift;
}

/** Unused chunks at which a class whose pages cannot be released gives back its last page (and under which it holds them): a page and a half. */
const unusedChunksBound = (perPage: number): number => perPage + ((perPage + 1) >> 1);

/**
 * Most bytes an arena with this page target holds that no record uses: under a page and a
 * half per size class (the last page partly used, and a spare), so 1.5 pages (2 for
 * one-chunk pages). For the default 256 MiB cap, about 27 MiB.
 */
export function arenaSlackBytes(pageTarget: number): number {
  return classSizes().reduce((sum, s) => sum + unusedChunksBound(1 << pageShift(s, pageTarget)) * s, 0);
}

/** Most bytes an arena with this page target holds once every record has left: a spare page per size class. */
export function arenaEmptyBytes(pageTarget: number): number {
  return classSizes().reduce((sum, s) => sum + (s << pageShift(s, pageTarget)), 0);
}

/**
 * A buffer from `source` as a Buffer: a Uint8Array given Buffer's prototype, like every
 * other page, so that the loads that see pages of several classes see one hidden class
 * (test/record-arena-maps.test.ts). Its memory is mapped on its own (page-source.ts),
 * committed as it is written, and unmapped by detaching it (freeNow). `again`: a size
 * class's page, whose next one the source may get ready ahead; not a large record's.
 */
function newPage(source: PageSource, bytes: number, again: boolean): Buffer {
  return Object.setPrototypeOf(new Uint8Array(source.alloc(bytes, again)), Buffer.prototype) as Buffer;
}


/** What a large record of `bytes` bytes costs: its own buffer, in whole OS pages. */
const largeBytes = (bytes: number): number => roundUp(Math.max(1, bytes), OS_PAGE);

export interface RecordArenaOptions {
  readonly pageTarget?: number;
  readonly pageSource?: PageSource;
}

export class RecordArena {
  readonly classes: readonly SizeClass[];
  /** Index of the class of large records (the last one). */
  readonly large: number;
  /** Class of a record of n bytes (n <= LARGE_RECORD_BYTES), at (n + 3) >> 2. */
  readonly #classBy4: Uint8Array;
  /** Bytes of pages and large records (what the records cost in memory). */
  #pageBytes = 0;
  /** Bytes of the classes' owner arrays. */
  #ownerBytes = 0;
  readonly #pageSource: PageSource;
  /** Whether the page source releases a page's memory in place (PageSource.release). */
  readonly #releases: boolean;
  /** The page source's releaseRange, when it has one: the free end of a class's last page goes back as records leave (releaseTail). */
  readonly #releaseRange: ((page: ArrayBuffer, from: number, to: number) => boolean) | undefined;

  /**
   * `maxBytes`: the most the arena will ever hold (the engine's footprint limit); sizes the
   * owner reservations. `pageTarget`: the smallest
   * page (default arenaPageTarget(maxBytes); the engine's is that of its cap). `pageSource`:
   * where pages and large records are allocated (default this thread's malloc).
   */
  constructor(
    maxBytes: number = 2 ** 36,
    { pageTarget = arenaPageTarget(maxBytes), pageSource = THIS_THREAD_PAGES }: RecordArenaOptions = {},
  ) {
    this.#pageSource = pageSource;
    this.#releases = pageSource.release !== undefined;
    this.#releaseRange = pageSource.releaseRange?.bind(pageSource);
    if (!Number.isSafeInteger(pageTarget) || pageTarget < MIN_PAGE_TARGET) throw new RangeError(`pageTarget must be at least ${MIN_PAGE_TARGET}, got ${pageTarget}`);
    const sizes = classSizes();
    this.classes = [...sizes.map((s) => new SizeClass(s, maxBytes, pageTarget, this.#releases)), new SizeClass(0, maxBytes, pageTarget, false)];
    this.large = sizes.length;
    if (this.large > 255) throw new Error('record arena: more size classes than the engine can record');
    this.#classBy4 = new Uint8Array((LARGE_RECORD_BYTES >> 2) + 1);
    let c = 0;
    for (let i = 0; i < this.#classBy4.length; i++) {
      while (sizes[c]! < i * 4) c++;
      this.#classBy4[i] = c;
    }
    for (const k of this.classes) this.#ownerBytes += k.owners.byteLength;
  }

  get pageBytes(): number {
    return this.#pageBytes;
  }

  /** Memory the arena holds: its pages, large records and owner arrays. */
  get footprintBytes(): number {
    return this.#pageBytes + this.#ownerBytes;
  }

  /** The class for a record of `bytes` bytes (0 is stored as 1: a class never has empty chunks). */
  classOf(bytes: number): number {
    return bytes > LARGE_RECORD_BYTES ? this.large : this.#classBy4[(bytes + 3) >> 2]!;
  }

  /**
   * Bytes a new record of class `cls` (of `bytes` bytes) would add to the footprint: a
   * page when its class's pages are full (a large record's own buffer), and a doubling of
   * the owner array when it is full. Usually 0.
   */
  allocCost(cls: number, bytes: number): number {
    const c = this.classes[cls]!;
    const owners = c.count >= c.ownerCap ? (ownersAfterGrowth(c.ownerCap, c.maxOwners) - c.ownerCap) * 4 : 0;
    if (c.size === 0) return owners + largeBytes(bytes);
    return owners + (c.count === c.pages.length << c.shift ? c.pageBytes : 0);
  }

  /** Takes a chunk of class `cls` for `owner`; `bytes` sizes the buffer of a large record. Returns the chunk index. */
  alloc(cls: number, owner: number, bytes: number): number {
    const c = this.classes[cls]!;
    const i = c.count;
    if (c.size === 0) {
      const held = largeBytes(bytes);
      const page = newPage(this.#pageSource, Math.max(1, bytes), false);
      c.pages[i] = page;
      c.words[i] = new Int32Array(page.buffer, 0, page.length >>> 2);
      c.views[i] = new DataView(page.buffer, 0, page.length);
      this.#pageBytes += held;
    } else {
      if (i === c.pages.length << c.shift) this.#addPage(c);
      const end = (i & c.mask) * c.size + c.size;
      if (end > c.residentEnd) c.residentEnd = end;
    }
    if (i >= c.ownerCap) {
      // The engine's footprint limit keeps every class far below this; past it an owner would be lost.
      if (i >= c.maxOwners) throw new Error(`record arena: class ${c.size} holds ${i} chunks, its most`);
      const n = ownersAfterGrowth(c.ownerCap, c.maxOwners);
      this.#ownerBytes += (n - c.ownerCap) * 4;
      c.growOwners(n);
    }
    c.owners[i] = owner;
    c.count = i + 1;
    return i;
  }

  /**
   * Frees chunk `i` of class `cls`. The class's last chunk moves into its place: returns
   * that chunk's owner (now at index i), or -1 when `i` was the last chunk.
   */
  free(cls: number, i: number): number {
    const c = this.classes[cls]!;
    const last = c.count - 1;
    let moved = -1;
    if (c.size === 0) {
      const page = c.pages[i]!;
      const bytes = largeBytes(page.length);
      this.#pageBytes -= bytes;
      freeNow(page);
      c.pages[i] = c.pages[last]!;
      c.pages.length = last;
      c.words[i] = c.words[last]!;
      c.words.length = last;
      c.views[i] = c.views[last]!;
      c.views.length = last;
    } else if (i !== last) {
      const size = c.size;
      const to = c.offsetOf(i);
      const from = c.offsetOf(last);
      if (size <= NATIVE_COPY_BYTES) {
        // Chunks are multiples of 4 bytes, at multiples of 4.
        const dst = c.words[i >>> c.shift]!;
        const src = c.words[last >>> c.shift]!;
        for (let d = to >>> 2, f = from >>> 2, end = f + (size >>> 2); f < end; ) dst[d++] = src[f++]!;
      } else {
        c.pageOf(last).copy(c.pageOf(i), to, from, from + size);
      }
    }
    if (i !== last) {
      moved = c.owners[last]!;
      c.owners[i] = moved;
    }
    c.count = last;
    if (c.size > 0) {
      if (c.lastPageSpare) this.#freeLastPage(c);
      else if (this.#releaseRange !== undefined) this.#releaseTail(c);
    }
    if (c.ownerCap > 64 && last * 4 < c.ownerCap) {
      const n = c.ownerCap >> 1;
      c.ownerRegion.resize(n * 4);
      this.#ownerBytes -= (c.ownerCap - n) * 4;
      c.ownerCap = n;
    }
    return moved;
  }

  /**
   * Frees every page no record uses: the spare page each class keeps so that records
   * coming and going at a page's edge do not map and unmap it each time (see free), and so
   * an empty class's last page; and unmaps the emptied pages kept for reuse, which hold no
   * memory, only their mappings. For a store that stands idle (after a delete of most keys,
   * up to a page and a half per class stays otherwise). Returns the bytes freed.
   */
  releaseSparePages(): number {
    let freed = 0;
    for (const c of this.classes) {
      if (c.size === 0) continue;
      if (c.emptied !== null) {
        freeNow(c.emptied.page);
        c.emptied = null;
      }
      const needed = Math.ceil(c.count / c.perPage);
      while (c.pages.length > needed) {
        this.#freeLastPage(c);
        freed += c.pageBytes;
      }
      if (this.#releaseRange !== undefined) this.#releaseTail(c);
    }
    return freed;
  }

  /** Gives class `c` (a size class) a page for its next chunks: its emptied one when it kept one, else a new one. */
  #addPage(c: SizeClass): void {
    const emptied = c.emptied;
    if (emptied !== null) {
      c.emptied = null;
      c.pages.push(emptied.page);
      c.words.push(emptied.words);
      c.views.push(emptied.view);
    } else {
      const page = newPage(this.#pageSource, c.pageBytes, true);
      c.pages.push(page);
      c.words.push(new Int32Array(page.buffer));
      c.views.push(new DataView(page.buffer));
    }
    this.#pageBytes += c.pageBytes;
    // An emptied page was released whole and a new mapping has never been written.
    c.residentEnd = 0;
  }

  /**
   * Releases the free end of class `c`'s last page past its first free chunk (and
   * TAIL_KEPT more), once TAIL_RELEASE_BYTES of it may be resident. Without it the chunks
   * a class's records have left stay resident in its last page until the page empties: the
   * arena's pages counted 71 MiB at a 64 MiB cap under churn, and what of them was resident
   * grew with the churn's length. The page's bytes still count in its footprint.
   */
  #releaseTail(c: SizeClass): void {
    const first = c.count & c.mask;
    if (first === 0) return; // the last page is full (or there is none)
    const keep = first * c.size + TAIL_KEPT;
    if (c.residentEnd - keep < TAIL_RELEASE_BYTES) return;
    const to = Math.min(c.pageBytes, roundUp(c.residentEnd, OS_PAGE));
    if (this.#releaseRange!(c.pages[c.pages.length - 1]!.buffer as ArrayBuffer, keep, to)) c.residentEnd = keep;
  }

  /**
   * Gives back the last page of class `c` (of a size class, not of large records), which
   * holds no record: its memory released and the page kept for the class's next one when
   * the source can (one per class), else freed.
   */
  #freeLastPage(c: SizeClass): void {
    const page = c.pages.pop()!;
    const words = c.words.pop()!;
    const view = c.views.pop()!;
    this.#pageBytes -= c.pageBytes;
    c.residentEnd = c.pageBytes; // the page now last is full
    if (c.emptied === null && this.#releases && this.#pageSource.release!(page.buffer as ArrayBuffer)) c.emptied = { page, words, view };
    else freeNow(page);
  }

  /** Checks every class's pages and owners against `ownerOk(owner, cls, chunk)`; throws on the first violation. */
  verify(ownerOk: (owner: number, cls: number, chunk: number) => boolean): number {
    let chunks = 0;
    let bytes = 0;
    let ownerBytes = 0;
    this.classes.forEach((c, cls) => {
      if (c.pages.length !== c.words.length || c.pages.length !== c.views.length) {
        throw new Error(`record arena: class ${c.size} has ${c.pages.length} pages, ${c.words.length} word views and ${c.views.length} DataViews`);
      }
      if (c.size === 0) {
        if (c.pages.length !== c.count) throw new Error(`record arena: large class holds ${c.pages.length} buffers for ${c.count} records`);
      } else {
        if (c.pages.some((p) => p.length !== c.pageBytes)) throw new Error(`record arena: class ${c.size} has a page that is not ${c.pageBytes} bytes`);
        const room = c.pages.length * c.perPage;
        if (room < c.count || c.lastPageSpare) throw new Error(`record arena: class ${c.size} holds ${c.pages.length} pages of ${c.perPage} for ${c.count} chunks`);
      }
      bytes += c.heldBytes;
      ownerBytes += c.owners.byteLength;
      for (let i = 0; i < c.count; i++) {
        if (!ownerOk(c.owners[i]!, cls, i)) throw new Error(`record arena: chunk ${i} of class ${c.size} has a wrong owner`);
      }
      chunks += c.count;
    });
    if (bytes !== this.#pageBytes) throw new Error(`record arena: counts ${this.#pageBytes} bytes of pages, holds ${bytes}`);
    if (ownerBytes !== this.#ownerBytes) throw new Error(`record arena: counts ${this.#ownerBytes} owner bytes, holds ${ownerBytes}`);
    return chunks;
  }
}
