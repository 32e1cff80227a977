// The engine's look-ahead for a pipelined batch (StoreEngine.prefetch): loads the memory
// that looking up the batch's keys will touch, all of them at once, so the cache misses of
// the batch overlap instead of coming one command at a time.

import type { BucketTable } from './bucket-table.ts';
import { PREFETCH_BATCH } from './engine-api.ts';
import type { RecordArena } from './record-arena.ts';
import { SLOT } from './slot-layout.ts';

const STRIDE_SHIFT = SLOT.STRIDE_SHIFT;
const HASH = SLOT.HASH;
const CHAIN = SLOT.CHAIN;
const META = SLOT.META;
const CHUNK = SLOT.CHUNK;
const CLS_SHIFT = SLOT.CLS_SHIFT;
/** A record's bytes are loaded a cache line apart, up to this many of them. */
const CACHE_LINE_BYTES = 64;
const PREFETCH_RECORD_BYTES = 256;

export class KeyPrefetch {
  /** The batch's key hashes, filled by the engine before load(); at most PREFETCH_BATCH. */
  readonly hashes = new Int32Array(PREFETCH_BATCH);
  /** Each key's bucket head, then the slot the second pass found. */
  readonly #heads = new Int32Array(PREFETCH_BATCH);
  readonly #slots: Int32Array;
  readonly #table: BucketTable;
  readonly #arena: RecordArena;
  /** Kept, so the loads cannot be optimised away. */
  #sink = 0;

  constructor(slots: Int32Array, table: BucketTable, arena: RecordArena) {
    this.#slots = slots;
    this.#table = table;
    this.#arena = arena;
  }

  /**
   * Passes of independent loads over the first n hashes (the CPU keeps several misses in
   * flight), each pass needing the one before: bucket heads, their slots, the next slot of
   * a chain whose head holds another hash, then every cache line of the records (the
   * lookup compares the key, a GET encodes the whole value, a SET overwrites it).
   * found[i]: the slot of those two whose hash is key i's (0 for neither), a starting point
   * for getAt.
   */
  load(n: number, found?: Int32Array): void {
    const heads = this.#heads;
    const hashes = this.hashes;
    const table = this.#table;
    // The bucket loads in a loop of their own, after the hashing: interleaved with the
    // hashing's chains of multiplies, fewer of the loads were in flight at once.
    for (let i = 0; i < n; i++) heads[i] = table.head(hashes[i]!);
    const slots = this.#slots;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const s = heads[i]!;
      if (s !== 0) sink ^= slots[(s << STRIDE_SHIFT) + META]!;
    }
    // At the table's load factor about one key in three is not its chain's head; one more
    // step finds most of them (a longer chain's tail is left to the lookup itself).
    for (let i = 0; i < n; i++) {
      const s = heads[i]!;
      if (s === 0) continue;
      const o = s << STRIDE_SHIFT;
      if (slots[o + HASH] !== hashes[i]) {
        const next = slots[o + CHAIN]!;
        heads[i] = next;
        if (next !== 0) sink ^= slots[(next << STRIDE_SHIFT) + META]!;
      }
    }
    const classes = this.#arena.classes;
    for (let i = 0; i < n; i++) {
      const s = heads[i]!;
      if (s === 0) {
        if (found !== undefined) found[i] = 0;
        continue;
      }
      const o = s << STRIDE_SHIFT;
      if (found !== undefined) found[i] = slots[o + HASH] === hashes[i] ? s : 0;
      const c = classes[(slots[o + META]! >>> CLS_SHIFT) & 0xff]!;
      // A large record's own page is left alone; a record's lines are touched up to 256 bytes.
      if (c.size > 0) {
        const chunk = slots[o + CHUNK]!;
        const page = c.pageOf(chunk);
        const at = c.offsetOf(chunk);
        const last = at + Math.min(c.size, PREFETCH_RECORD_BYTES) - 1;
        for (let b = at; b < last; b += CACHE_LINE_BYTES) sink ^= page[b]!;
        sink ^= page[last]!;
      }
    }
    this.#sink = sink;
  }
}
