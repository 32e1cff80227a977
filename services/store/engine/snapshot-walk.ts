// A point-in-time walk over the keyspace (Keyspace.beginSnapshot), copy-on-write, as
// Dragonfly's versioned snapshots: the walk hands the keys to its sink from the least to
// the most recently used while commands run between its steps, and before a command
// changes or removes a key the walk has not reached, the engine hands that key's record as
// it was to the sink first; keys created after the start are skipped. So the sink receives
// exactly the keyspace of the start, each key once, and nothing is copied up front (no
// pause). This module keeps the walk's account of which slots are done, and its steps.

import type { LruList } from './lru-list.ts';
import { SLOT } from './slot-layout.ts';

const LRU = SLOT.LRU;

/**
 * One key's record for a snapshot: key bytes src[ks, ke), value bytes src[vs, ve) (valid
 * during the call only), and its expiry on the engine's clock (0 = none).
 */
export type SnapshotSink = (src: Buffer, ks: number, ke: number, vs: number, ve: number, expiresAt: number) => void;

/**
 * A point-in-time walk over the keyspace (see Keyspace.beginSnapshot). Commands may run
 * between its steps: the sink receives exactly the keys of the moment it began, each once.
 */
export interface SnapshotWalk {
  /** The engine's clock when the walk began: the snapshot's point in time. */
  readonly startedAt: number;
  /** Hands up to `max` more keys to the sink; false once every key has been handed over. */
  step(max: number): boolean;
  /** Ends the walk (finished or abandoned); the engine stops copying keys before changing them. */
  end(): void;
}

/** The slots of a walk under way: which are done (handed to the sink, or not to be). */
export class WalkedSlots {
  readonly sink: SnapshotSink;
  /** The engine's clock when the walk began. */
  readonly startedAt: number;
  /** Slots at or past this were never used when the walk began: they hold only newer keys. */
  readonly #limit: number;
  /** A bit per slot below the limit: handed to the sink already, or not to be (a newer key). */
  readonly #done: Uint8Array;

  /** A walk over the slots below `limit` (the slots used so far). */
  constructor(sink: SnapshotSink, startedAt: number, limit: number) {
    this.sink = sink;
    this.startedAt = startedAt;
    this.#limit = limit;
    this.#done = new Uint8Array((limit + 7) >> 3);
  }

  /** Marks the slot done; true when it was not, and it held a key when the walk began: its record goes to the sink now. */
  claim(slot: number): boolean {
    if (slot >= this.#limit) return false;
    const bit = 1 << (slot & 7);
    if ((this.#done[slot >> 3]! & bit) !== 0) return false;
    this.#done[slot >> 3]! |= bit;
    return true;
  }

  /** A key newer than the walk took this slot: it is not part of the walk. */
  skip(slot: number): void {
    if (slot < this.#limit) this.#done[slot >> 3]! |= 1 << (slot & 7);
  }
}

/**
 * The walk's steps over the LRU list, from the least to the most recently used key (the
 * order a load inserts them in, so LRU order comes back). `preserve` hands a slot's record
 * to the sink unless it went already; `current` says whether the walk is still the
 * engine's; `release` ends it there.
 */
export function lruOrderWalk(walked: WalkedSlots, lru: LruList, preserve: (slot: number) => void, current: () => boolean, release: () => void): SnapshotWalk {
  lru.cursor = lru.oldest;
  return {
    startedAt: walked.startedAt,
    step(max: number): boolean {
      if (!current()) throw new Error('the snapshot walk has ended');
      let s = lru.cursor;
      for (let n = 0; n < max && s !== LRU; n++) {
        preserve(s);
        s = lru.after(s);
      }
      lru.cursor = s;
      return s !== LRU;
    },
    end(): void {
      if (!current()) return;
      release();
      lru.cursor = -1;
    },
  };
}
