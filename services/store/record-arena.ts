// Where the store's bytes live: every entry's key and value, side by side, in large
// Buffers outside the JavaScript heap.
//
// Why: a million keys held as JS strings cost V8 object headers, a Map entry each, and
// heap slack that the garbage collector keeps after a bulk load (measured: ~320 bytes of
// RSS per 100-byte entry, where Redis takes ~210). Records in pages of raw memory cost
// their bytes plus size-class rounding, and the collector never walks them.
//
// Layout. A record of n bytes goes to the smallest size class that fits it: multiples of
// 8 bytes up to 256, then steps of about 6% up to LARGE_RECORD_BYTES. A class holds its
// records densely, as chunks 0..count-1 in pages of a power-of-two number of chunks (about
// PAGE_BYTES each), so chunk i is at page i >> shift, byte (i & mask) * size. Freeing chunk
// i moves the class's last chunk into its place (one copy of at most LARGE_RECORD_BYTES),
// so a class never has holes, and a page is released as soon as the class no longer
// needs it (one empty page is kept, so a SET/DELETE at a page edge does not allocate).
// Memory held is therefore the live records, their rounding (at most ~6%, or 7 bytes), and
// at most two partial pages per class in use.
//
// Records larger than LARGE_RECORD_BYTES get a page of exactly their size (class LARGE):
// freeing one moves the last page reference instead of copying bytes.
//
// The arena knows nothing of keys. Each chunk records its owner (the engine's slot
// number); when a free moves a chunk, `free` returns the owner of the moved chunk so the
// engine can update where that entry lives.

/** Target size of a page of small records. */
export const PAGE_BYTES = 64 * 1024;
/** Records above this get a page of their own, of exactly their size. */
export const LARGE_RECORD_BYTES = 16 * 1024;

export class SizeClass {
  /** Chunk size in bytes; 0 for the class of large records (each its own page). */
  readonly size: number;
  /** Chunk i is in pages[i >>> shift] at byte (i & mask) * size. */
  readonly shift: number;
  readonly mask: number;
  readonly pages: Buffer[] = [];
  /** Chunks in use: 0..count-1. */
  count = 0;
  /** Chunk → owner (the engine's slot). */
  owners = new Int32Array(16);

  constructor(size: number) {
    this.size = size;
    let shift = 0;
    if (size > 0) while (size << (shift + 1) <= PAGE_BYTES) shift++;
    this.shift = shift;
    this.mask = (1 << shift) - 1;
  }

  /** The page holding chunk i. */
  pageOf(i: number): Buffer {
    return this.pages[i >>> this.shift]!;
  }

  /** Where chunk i starts in its page. */
  offsetOf(i: number): number {
    return (i & this.mask) * this.size;
  }

  /** Pages needed for `count` chunks. */
  pagesFor(count: number): number {
    return (count + this.mask) >>> this.shift;
  }
}

/** Class sizes: 8, 16, ..., 256, then ~6% steps rounded up to 8 bytes, to LARGE_RECORD_BYTES. */
function classSizes(): number[] {
  const sizes: number[] = [];
  for (let s = 8; s <= 256; s += 8) sizes.push(s);
  let s = 256;
  while (s < LARGE_RECORD_BYTES) {
    s = Math.min(LARGE_RECORD_BYTES, Math.ceil((s * 1.0625) / 8) * 8);
    sizes.push(s);
  }
  return sizes;
}

export class RecordArena {
  readonly classes: readonly SizeClass[];
  /** Index of the class of large records (the last one). */
  readonly large: number;
  /** Class of a record of n bytes (n <= LARGE_RECORD_BYTES), at (n + 7) >> 3. */
  readonly #classBy8: Uint8Array;
  /** Bytes of all pages held (what the records cost in memory). */
  #pageBytes = 0;

  constructor() {
    const sizes = classSizes();
    this.classes = [...sizes.map((s) => new SizeClass(s)), new SizeClass(0)];
    this.large = sizes.length;
    this.#classBy8 = new Uint8Array((LARGE_RECORD_BYTES >> 3) + 1);
    let c = 0;
    for (let i = 0; i < this.#classBy8.length; i++) {
      while (sizes[c]! < i * 8) c++;
      this.#classBy8[i] = c;
    }
  }

  get pageBytes(): number {
    return this.#pageBytes;
  }

  /** The class for a record of `bytes` bytes (0 is stored as 1: a class never has empty chunks). */
  classOf(bytes: number): number {
    return bytes > LARGE_RECORD_BYTES ? this.large : this.#classBy8[(bytes + 7) >> 3]!;
  }

  /** Takes a chunk of class `cls` for `owner`; `bytes` sizes the page of a large record. Returns the chunk index. */
  alloc(cls: number, owner: number, bytes: number): number {
    const c = this.classes[cls]!;
    const i = c.count;
    if (c.size === 0) {
      const page = Buffer.allocUnsafeSlow(Math.max(1, bytes));
      c.pages[i] = page;
      this.#pageBytes += page.length;
    } else if (c.pagesFor(i + 1) > c.pages.length) {
      const page = Buffer.allocUnsafeSlow(c.size << c.shift);
      c.pages.push(page);
      this.#pageBytes += page.length;
    }
    if (i >= c.owners.length) {
      const grown = new Int32Array(c.owners.length * 2);
      grown.set(c.owners);
      c.owners = grown;
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
      this.#pageBytes -= c.pages[i]!.length;
      c.pages[i] = c.pages[last]!;
      c.pages.length = last;
    } else if (i !== last) {
      const size = c.size;
      const from = c.offsetOf(last);
      c.pageOf(last).copy(c.pageOf(i), c.offsetOf(i), from, from + size);
    }
    if (i !== last) {
      moved = c.owners[last]!;
      c.owners[i] = moved;
    }
    c.count = last;
    if (c.size > 0) {
      // Keep at most one empty page at the end of the class.
      const needed = c.pagesFor(last);
      while (c.pages.length > needed + 1) this.#pageBytes -= c.pages.pop()!.length;
    }
    if (c.owners.length > 64 && last * 4 < c.owners.length) c.owners = c.owners.slice(0, c.owners.length >> 1);
    return moved;
  }

  /** Checks every class's pages and owners against `ownerOk(owner, cls, chunk)`; throws on the first violation. */
  verify(ownerOk: (owner: number, cls: number, chunk: number) => boolean): number {
    let chunks = 0;
    let bytes = 0;
    this.classes.forEach((c, cls) => {
      if (c.size === 0) {
        if (c.pages.length !== c.count) throw new Error(`record arena: large class holds ${c.pages.length} pages for ${c.count} records`);
      } else {
        const needed = c.pagesFor(c.count);
        if (c.pages.length < needed || c.pages.length > needed + 1) {
          throw new Error(`record arena: class ${c.size} holds ${c.pages.length} pages for ${c.count} chunks`);
        }
      }
      for (const page of c.pages) bytes += page.length;
      for (let i = 0; i < c.count; i++) {
        if (!ownerOk(c.owners[i]!, cls, i)) throw new Error(`record arena: chunk ${i} of class ${c.size} has a wrong owner`);
      }
      chunks += c.count;
    });
    if (bytes !== this.#pageBytes) throw new Error(`record arena: counts ${this.#pageBytes} page bytes, holds ${bytes}`);
    return chunks;
  }
}
