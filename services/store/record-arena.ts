// Where the store's bytes live: every entry's key and value, side by side, in memory
// outside the JavaScript heap that the arena gives back to the OS as soon as the records
// leave.
//
// Why: a million keys held as JS strings cost V8 object headers, a Map entry each, and
// heap slack that the garbage collector keeps after a bulk load (measured: ~320 bytes of
// RSS per 100-byte entry, where Redis takes ~210). Records in raw memory cost their bytes
// plus size-class rounding, and the collector never walks them.
//
// Layout. A record of n bytes goes to the smallest size class that fits it: multiples of
// 4 bytes up to 256 (the rounding of a 100-byte value with its key costs at most 3 bytes,
// where steps of 8 cost up to 7: 4 bytes per key on average, measured as 169 against 165 B
// of RSS per key for 1,000,000 keys of 100-byte values), then steps of about 6% up to
// LARGE_RECORD_BYTES. A class holds its
// records densely, as chunks 0..count-1 of one region: chunk i is at byte i * size.
// Freeing chunk i moves the class's last chunk into its place (one copy of at most
// LARGE_RECORD_BYTES), so a class never has holes and needs no compaction.
//
// Memory. A class's region is a resizable ArrayBuffer: V8 reserves address space for it
// once (no memory) and commits or decommits pages as it grows and shrinks, in steps of
// max(STEP_BYTES, two chunks). A class grows by one step when full and shrinks when two
// steps are unused, keeping one (so a SET/DELETE at a step edge does not resize each time;
// with one-chunk steps, a churn of 1 B to 64 KiB values resized a region on 58% of
// commands, with two-chunk steps on 21%).
// Decommitted pages leave RSS at once, without the garbage collector, and without
// malloc: Buffers from malloc leave holes in its heap that it keeps (measured: RSS stayed
// at 270 MiB with no key left, after a churn of 1 B to 64 KiB values under a 64 MiB cap).
//
// Records larger than LARGE_RECORD_BYTES get a region of exactly their size each (class
// LARGE), freed (detached, which unmaps it) when the record goes; freeing one moves the
// last region reference instead of copying bytes.
//
// Memory held is therefore the live records, their rounding (at most ~6%, or 7 bytes),
// and at most two steps per class in use: footprintBytes, which the engine holds under a
// limit derived from its memory cap.
//
// The arena knows nothing of keys. Each chunk records its owner (the engine's slot
// number); when a free moves a chunk, `free` returns the owner of the moved chunk so the
// engine can update where that entry lives. No region is ever handed out of the arena (the
// engine copies bytes out, or makes a string of them), so nothing else holds a view of one.

import { NATIVE_COPY_BYTES } from './copy-bytes.ts';
import { GcBallast } from './gc-ballast.ts';

/** Smallest growth step of a class's region (a multiple of the OS page size). */
export const STEP_BYTES = 16 * 1024;
/** Records above this get a region of their own, of exactly their size. */
export const LARGE_RECORD_BYTES = 64 * 1024;
/** Most address space one class reserves; its region never grows past it. */
const MAX_REGION_BYTES = 2 ** 36;
const OS_PAGE = 4096;

const roundUp = (n: number, to: number): number => Math.ceil(n / to) * to;

// Reading or writing a byte of a view over a resizable buffer costs V8 ~3 times a plain
// Buffer's (it re-checks the buffer's length every time): measured 33-45 ns against 11 ns
// to compare a 16-byte key. The hot paths (comparing a key, writing a short record) go
// through an Int32Array over the same memory instead, 4 bytes per access: 14-17 ns.
// Records start at multiples of 4, so words are aligned; word order is the platform's.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

const INITIAL_OWNERS = 16;
/** One owner per key at most: the engine's MAX_KEYS. */
const MAX_OWNERS = 2 ** 27;
/** Owners added per growth once past it (256 KiB committed a step); doubling below. */
const OWNER_GROWTH = 65_536;
const ownersAfterGrowth = (cap: number, max: number): number => Math.min(max, cap < OWNER_GROWTH ? cap * 2 : cap + OWNER_GROWTH);

export class SizeClass {
  /** Chunk size in bytes; 0 for the class of large records (each its own region). */
  readonly size: number;
  /** Chunk i is in pages[i >>> shift] at byte (i & mask) * size: one region for a size class, one per record for LARGE. */
  readonly shift: number;
  readonly mask: number;
  readonly pages: Buffer[] = [];
  /** The same memory as pages, as 32-bit words (see LITTLE_ENDIAN above). */
  readonly words: Int32Array[] = [];
  /** Bytes a region grows or shrinks by. */
  readonly step: number;
  /** Chunks in use: 0..count-1. */
  count = 0;
  /**
   * Most chunks the class can hold: the arena never holds more than its maxBytes, so
   * never more than maxBytes / size of them (and never more than the engine's keys).
   */
  readonly maxOwners: number;
  /**
   * Chunk → owner (the engine's slot), over a resizable buffer that reserves room for
   * maxOwners: it grows and shrinks in place, never copied (a copy of millions of owners
   * in one allocation was the last stop-the-world growth). The reservation is address
   * space, not memory, but it adds up: at one owner per key the engine can hold it was
   * 512 MiB a class, 78 GiB an arena, and tests that make hundreds of engines ran out of
   * address space before the collector freed the old ones.
   */
  readonly ownerRegion: ArrayBuffer;
  readonly owners: Int32Array;
  /** owners.length, kept here: a resizable buffer's length is slower to read. */
  ownerCap = INITIAL_OWNERS;
  /** The resizable buffer behind pages[0] (size classes only, once used). */
  region: ArrayBuffer | undefined;
  /** region.byteLength, kept here: a resizable buffer's length is slower to read. */
  committed = 0;

  /** `maxBytes`: the most the arena holds (see RecordArena). */
  constructor(size: number, maxBytes: number) {
    this.size = size;
    this.shift = size > 0 ? 31 : 0;
    this.mask = size > 0 ? 0x7fffffff : 0;
    this.step = size > 0 ? Math.max(STEP_BYTES, roundUp(2 * size, OS_PAGE)) : 0;
    // A large record takes more than LARGE_RECORD_BYTES. Twice that, for headroom: an
    // overwrite holds its old chunk and its new one for a moment.
    const chunks = Math.ceil(maxBytes / (size > 0 ? size : LARGE_RECORD_BYTES));
    this.maxOwners = Math.min(MAX_OWNERS, Math.max(INITIAL_OWNERS, 2 * chunks + 64));
    this.ownerRegion = new ArrayBuffer(INITIAL_OWNERS * 4, { maxByteLength: this.maxOwners * 4 });
    this.owners = new Int32Array(this.ownerRegion);
  }

  /** The region holding chunk i. */
  pageOf(i: number): Buffer {
    return this.pages[i >>> this.shift]!;
  }

  /** Where chunk i starts in its region. */
  offsetOf(i: number): number {
    return (i & this.mask) * this.size;
  }

  /** True when the record in chunk i starts with the bytes buf[start, end). */
  startsWith(i: number, buf: Uint8Array, start: number, end: number): boolean {
    const page = this.pages[i >>> this.shift]!;
    const at = (i & this.mask) * this.size;
    let k = start;
    if (LITTLE_ENDIAN) {
      const words = this.words[i >>> this.shift]!;
      let w = at >>> 2;
      for (const whole = start + ((end - start) & ~3); k < whole; k += 4, w++) {
        if (words[w] !== (buf[k]! | (buf[k + 1]! << 8) | (buf[k + 2]! << 16) | (buf[k + 3]! << 24))) return false;
      }
    }
    for (let b = at + k - start; k < end; k++, b++) if (page[b] !== buf[k]) return false;
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

  /** Bytes committed for this class's records. */
  get committedBytes(): number {
    return this.size > 0 ? this.committed : this.pages.reduce((sum, p) => sum + p.length, 0);
  }
}

/** Class sizes: 4, 8, ..., 256, then ~6% steps rounded up to 8 bytes, to LARGE_RECORD_BYTES. */
function classSizes(): number[] {
  if (cachedSizes !== undefined) return cachedSizes;
  const sizes: number[] = [];
  for (let s = 4; s <= 256; s += 4) sizes.push(s);
  let s = 256;
  while (s < LARGE_RECORD_BYTES) {
    s = Math.min(LARGE_RECORD_BYTES, Math.ceil((s * 1.0625) / 8) * 8);
    sizes.push(s);
  }
  return (cachedSizes = sizes);
}
let cachedSizes: number[] | undefined;

/** Most bytes the arena holds that no record uses: two steps (one partly used, one spare) per size class. */
export function arenaSlackBytes(): number {
  return classSizes().reduce((sum, s) => sum + 2 * Math.max(STEP_BYTES, roundUp(2 * s, OS_PAGE)), 0);
}

/** A fresh region of exactly `bytes` bytes (at least 1), outside malloc's heap (a resizable buffer is reserved and committed by pages). */
function exactRegion(bytes: number): Buffer {
  return bufferOver(new ArrayBuffer(Math.max(1, bytes), { maxByteLength: Math.max(1, bytes) }));
}

/**
 * A Buffer over the whole of a resizable ArrayBuffer, tracking its length as it is
 * resized. Not Buffer.from(region): V8 (Node 24) gives every instance of a Uint8Array
 * subclass (Buffer's FastBuffer) made over a resizable buffer a hidden class of its own, so
 * each size class's page had its own, and a load that saw the pages of five classes went
 * megamorphic. That was ~11% of the store's time at pipeline depth 16, and ~6% less
 * throughput, once values of a few sizes had been stored (test/record-arena-maps.test.ts).
 * A plain Uint8Array over it, given Buffer's prototype, shares one hidden class with
 * every other page.
 */
function bufferOver(region: ArrayBuffer): Buffer {
  return Object.setPrototypeOf(new Uint8Array(region), Buffer.prototype) as Buffer;
}

/** What a large record of `bytes` bytes costs: its own region, in whole OS pages. */
const largeRegionBytes = (bytes: number): number => roundUp(Math.max(1, bytes), OS_PAGE);

export class RecordArena {
  readonly classes: readonly SizeClass[];
  /** Index of the class of large records (the last one). */
  readonly large: number;
  /** Class of a record of n bytes (n <= LARGE_RECORD_BYTES), at (n + 3) >> 2. */
  readonly #classBy4: Uint8Array;
  /** Bytes committed for records (what the records cost in memory). */
  #pageBytes = 0;
  /** Bytes of the classes' owner arrays. */
  #ownerBytes = 0;
  /** Address space each class's region reserves. */
  readonly #regionBytes: number;
  /** Told of every byte the arena commits or gives back (see gc-ballast.ts). */
  readonly #ballast: GcBallast;

  /**
   * `maxBytes`: the most the arena will ever hold (the engine's footprint limit); sizes the
   * reservations. `ballast`: the engine's, if it has one.
   */
  constructor(maxBytes: number = MAX_REGION_BYTES, ballast: GcBallast = new GcBallast(0)) {
    this.#ballast = ballast;
    const sizes = classSizes();
    this.classes = [...sizes.map((s) => new SizeClass(s, maxBytes)), new SizeClass(0, maxBytes)];
    this.large = sizes.length;
    if (this.large > 255) throw new Error('record arena: more size classes than the engine can record');
    this.#classBy4 = new Uint8Array((LARGE_RECORD_BYTES >> 2) + 1);
    let c = 0;
    for (let i = 0; i < this.#classBy4.length; i++) {
      while (sizes[c]! < i * 4) c++;
      this.#classBy4[i] = c;
    }
    for (const k of this.classes) this.#ownerBytes += k.owners.byteLength;
    ballast.take(this.#ownerBytes);
    this.#regionBytes = Math.min(MAX_REGION_BYTES, roundUp(Math.max(maxBytes, 1), OS_PAGE));
  }

  get pageBytes(): number {
    return this.#pageBytes;
  }

  /** Memory the arena holds: its committed regions and its owner arrays. */
  get footprintBytes(): number {
    return this.#pageBytes + this.#ownerBytes;
  }


  /** The class for a record of `bytes` bytes (0 is stored as 1: a class never has empty chunks). */
  classOf(bytes: number): number {
    return bytes > LARGE_RECORD_BYTES ? this.large : this.#classBy4[(bytes + 3) >> 2]!;
  }

  /**
   * Bytes a new record of class `cls` (of `bytes` bytes) would add to the footprint: a
   * step when its class's region is full (a large record's own region), and a doubling of
   * the owner array when it is full. Usually 0.
   */
  allocCost(cls: number, bytes: number): number {
    const c = this.classes[cls]!;
    const owners = c.count >= c.ownerCap ? (ownersAfterGrowth(c.ownerCap, c.maxOwners) - c.ownerCap) * 4 : 0;
    if (c.size === 0) return owners + largeRegionBytes(bytes);
    return owners + ((c.count + 1) * c.size > c.committed ? c.step : 0);
  }

  /** Takes a chunk of class `cls` for `owner`; `bytes` sizes the region of a large record. Returns the chunk index. */
  alloc(cls: number, owner: number, bytes: number): number {
    const c = this.classes[cls]!;
    const i = c.count;
    if (c.size === 0) {
      const held = largeRegionBytes(bytes);
      this.#ballast.take(held); // before the region exists: V8's count must not rise first
      const page = exactRegion(bytes);
      c.pages[i] = page;
      c.words[i] = new Int32Array(page.buffer, 0, page.length >>> 2);
      this.#pageBytes += held;
    } else {
      if (c.region === undefined) {
        c.region = new ArrayBuffer(0, { maxByteLength: roundUp(this.#regionBytes, c.step) + c.step });
        c.pages[0] = bufferOver(c.region); // both track the region's length as it is resized
        c.words[0] = new Int32Array(c.region);
      }
      if ((i + 1) * c.size > c.committed) {
        c.committed += c.step;
        this.#ballast.resize(c.region, c.committed);
        this.#pageBytes += c.step;
      }
    }
    if (i >= c.ownerCap) {
      // The engine's footprint limit keeps every class far below this; past it an owner would be lost.
      if (i >= c.maxOwners) throw new Error(`record arena: class ${c.size} holds ${i} chunks, its most`);
      const n = ownersAfterGrowth(c.ownerCap, c.maxOwners);
      this.#ballast.resize(c.ownerRegion, n * 4);
      this.#ownerBytes += (n - c.ownerCap) * 4;
      c.ownerCap = n;
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
      const bytes = largeRegionBytes(page.length);
      this.#pageBytes -= bytes;
      (page.buffer as ArrayBuffer).transfer(0); // unmaps it now, not at the next collection
      this.#ballast.give(bytes);
      c.pages[i] = c.pages[last]!;
      c.pages.length = last;
      c.words[i] = c.words[last]!;
      c.words.length = last;
    } else if (i !== last) {
      const size = c.size;
      const from = last * size;
      if (size <= NATIVE_COPY_BYTES) {
        const words = c.words[0]!; // chunks are multiples of 4 bytes, at multiples of 4
        for (let d = (i * size) >>> 2, f = from >>> 2, end = f + (size >>> 2); f < end; ) words[d++] = words[f++]!;
      } else {
        c.pages[0]!.copy(c.pages[0]!, i * size, from, from + size);
      }
    }
    if (i !== last) {
      moved = c.owners[last]!;
      c.owners[i] = moved;
    }
    c.count = last;
    if (c.size > 0) {
      // Keep at most one unused step at the end of the region.
      if (c.committed - last * c.size >= 2 * c.step) {
        const keep = roundUp(last * c.size, c.step) + c.step;
        if (c.committed > keep) {
          this.#pageBytes -= c.committed - keep;
          c.committed = keep;
          this.#ballast.resize(c.region!, keep);
        }
      }
    }
    if (c.ownerCap > 64 && last * 4 < c.ownerCap) {
      const n = c.ownerCap >> 1;
      this.#ballast.resize(c.ownerRegion, n * 4);
      this.#ownerBytes -= (c.ownerCap - n) * 4;
      c.ownerCap = n;
    }
    return moved;
  }

  /** Checks every class's regions and owners against `ownerOk(owner, cls, chunk)`; throws on the first violation. */
  verify(ownerOk: (owner: number, cls: number, chunk: number) => boolean): number {
    let chunks = 0;
    let bytes = 0;
    let ownerBytes = 0;
    this.classes.forEach((c, cls) => {
      if (c.size === 0) {
        if (c.pages.length !== c.count) throw new Error(`record arena: large class holds ${c.pages.length} regions for ${c.count} records`);
      } else if (c.region !== undefined) {
        const held = c.region.byteLength;
        if (held !== c.committed) throw new Error(`record arena: class ${c.size} counts ${c.committed} bytes, holds ${held}`);
        if (c.pages[0]!.length !== held) throw new Error(`record arena: class ${c.size} sees ${c.pages[0]!.length} of its ${held} bytes`);
        if (held % c.step !== 0 || held < c.count * c.size || held >= roundUp(c.count * c.size, c.step) + 2 * c.step) {
          throw new Error(`record arena: class ${c.size} holds ${held} bytes for ${c.count} chunks`);
        }
      } else if (c.count !== 0) {
        throw new Error(`record arena: class ${c.size} has ${c.count} chunks and no region`);
      }
      bytes += c.size > 0 ? c.committedBytes : c.pages.reduce((sum, p) => sum + largeRegionBytes(p.length), 0);
      ownerBytes += c.owners.byteLength;
      for (let i = 0; i < c.count; i++) {
        if (!ownerOk(c.owners[i]!, cls, i)) throw new Error(`record arena: chunk ${i} of class ${c.size} has a wrong owner`);
      }
      chunks += c.count;
    });
    if (bytes !== this.#pageBytes) throw new Error(`record arena: counts ${this.#pageBytes} committed bytes, holds ${bytes}`);
    if (ownerBytes !== this.#ownerBytes) throw new Error(`record arena: counts ${this.#ownerBytes} owner bytes, holds ${ownerBytes}`);
    return chunks;
  }
}
