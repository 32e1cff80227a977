// A key's slot: 8 int32s side by side in one Int32Array, at (slot << STRIDE_SHIFT) + field.
// Its key hash, its bucket-chain link, its LRU links and when it last moved in that list,
// key length and size class, value length, and its chunk in the arena sit together, so a
// lookup or an LRU move touches one cache line per slot instead of one per field (memory
// latency is most of a GET's cost). Expiry times sit in a Float64Array of their own, read
// only for keys whose slot is flagged HAS_TTL.
//
// The engine owns the array; the hash table (bucket-table.ts) follows HASH and CHAIN, the
// LRU list (lru-list.ts) PREV, NEXT and STAMP. A module that reads the fields on a hot path
// copies them into constants of its own (`const HASH = SLOT.HASH`): TurboFan folds a
// module's own constants into the code, not imported bindings (a loop over slots ran ~1.6
// times as long with imported ones, in a microbenchmark on Node 24).

export const SLOT = {
  /** log2 of the int32s per slot. */
  STRIDE_SHIFT: 3,
  /** The key's hash (signed 32-bit). */
  HASH: 0,
  /** Next slot in the same hash bucket (or in the free list); 0 ends it. */
  CHAIN: 1,
  /** LRU neighbours: less and more recently used. */
  PREV: 2,
  NEXT: 3,
  /** Key length (bits 0-7; 0 marks a free slot), size class (bits 8-15), HAS_TTL. */
  META: 4,
  VLEN: 5,
  CHUNK: 6,
  /** The LRU list's link count when the slot was last linked at the most recent end. */
  STAMP: 7,
  /** META's flag for a key with an expiry time. */
  HAS_TTL: 1 << 16,
  KLEN_MASK: 0xff,
  CLS_SHIFT: 8,
  /** Slot 0: the sentinel of the LRU list and the "none" of chains and the free list. */
  LRU: 0,
} as const;

/** Bytes of one slot's fields. */
export const SLOT_BYTES = 4 << SLOT.STRIDE_SHIFT;
