import type { BucketTable } from './bucket-table.ts';
import { arenaSlackBytes, type RecordArena } from './record-arena.ts';
import type { SlotArrays } from './slot-arrays.ts';
import { SLOT_BYTES } from './slot-layout.ts';

// What the engine's data costs in memory beyond USAGE (size-class rounding, partly filled
// pages, and ~50 bytes of slot, expiry time, bucket and chunk owner per key, several times a
// tiny value) is bounded too: the footprint (the arena's pages and owner arrays plus the
// slot, expiry and bucket arrays) stays under FOOTPRINT_FACTOR times the cap plus the arena's
// fixed slack. A SET that would take it past evicts (lru) or is refused (noeviction) as at
// the cap. This module keeps that account; the keyspace decides what to evict.

/** The footprint limit is this times the cap, plus the arena's fixed slack. */
export const FOOTPRINT_FACTOR = 1.25;

/** The footprint limit for a cap: its share, every size class's partly used and spare page, and the empty engine's arrays. */
export function footprintLimitFor(maxMemoryBytes: number, pageTarget: number): number {
  return FOOTPRINT_FACTOR * maxMemoryBytes + arenaSlackBytes(pageTarget) + (1 << 20);
}

export class FootprintBudget {
  readonly limitBytes: number;
  readonly #arena: RecordArena;
  readonly #slotArrays: SlotArrays;
  readonly #table: BucketTable;

  constructor(limitBytes: number, arena: RecordArena, slotArrays: SlotArrays, table: BucketTable) {
    this.limitBytes = limitBytes;
    this.#arena = arena;
    this.#slotArrays = slotArrays;
    this.#table = table;
  }

  /** What the limit bounds: the arena plus the per-slot and bucket arrays (during a resize both bucket tables). */
  get bytes(): number {
    return this.#arena.footprintBytes + this.#slotArrays.bytes + this.#table.bytes;
  }

  /** True when adding `extra` bytes would take the footprint past its limit. */
  over(extra: number): boolean {
    return this.bytes + extra > this.limitBytes;
  }

  /**
   * Bytes a new key would add to the tables: the slot arrays' next growth step when no slot
   * is free, and a new bucket table when the keys are about to outgrow the buckets. Evicting
   * one key frees a slot and keeps the table as it is, so at the growth edge a full engine
   * evicts one key instead of growing.
   */
  newKeyCost(live: number): number {
    return this.#slotArrays.newSlotBytes() + this.#table.newKeyBytes(live);
  }

  /** Bytes a record of class `cls` (for a new key when `newKey`) adds: 0 for most SETs, which reuse a chunk or a page. */
  growthFor(cls: number, size: number, newKey: boolean, live: number): number {
    const record = this.#arena.allocCost(cls, size);
    return newKey ? record + this.newKeyCost(live) : record;
  }

  /**
   * How many keys of about `recordBytes` bytes each (key plus value) fit from now: under
   * `maxKeys`, under the cap and under the footprint limit, counting each key's chunk, slot
   * and bucket (a bucket costs 4 bytes, up to 8 per key when the table is a power of two above the keys).
   */
  keysThatFit(keys: number, recordBytes: number, maxKeys: number, maxMemoryBytes: number): number {
    const arena = this.#arena;
    const cls = arena.classOf(Math.max(1, Math.ceil(recordBytes)));
    const chunkBytes = cls === arena.large ? Math.ceil(recordBytes / 4096) * 4096 : arena.classes[cls]!.size;
    const perKey = chunkBytes + SLOT_BYTES + 8 + 8;
    const room = this.limitBytes - this.bytes;
    return Math.floor(Math.min(keys, maxKeys, maxMemoryBytes / Math.max(1, recordBytes), room / perKey));
  }
}
