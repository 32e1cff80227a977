// The engine's slot arrays: every key's fields (slot-layout.ts) in one Int32Array and its
// expiry time in a Float64Array, both typed arrays over resizable ArrayBuffers that reserve
// address space for maxKeys slots up front, so growing one commits more pages in place and
// copies nothing (a store of tens of millions of keys must not stop for a copy). They grow
// by SLOT_GROWTH slots at a time (doubling only while smaller), because committing costs
// time in proportion to the bytes added (~4 ms for 128 MiB), about 0.1 ms a step. A lookup
// indexes one flat array: segments indexed by slot >> shift cost an extra dependent load
// per field (2-3x the time of a flat array on random access in a micro-benchmark).
// Freed slots are kept on a free list through their CHAIN field and taken first.

import { resizableBuffer } from './resizable-buffer.ts';
import { SLOT, SLOT_BYTES } from './slot-layout.ts';

const STRIDE_SHIFT = SLOT.STRIDE_SHIFT;
const CHAIN = SLOT.CHAIN;
const META = SLOT.META;

/** Slots the slot arrays start with; they double (in place) up to SLOT_GROWTH. */
export const INITIAL_SLOTS = 1024;
/** Slots added per growth of the slot arrays past that: 2 MiB of slot fields and 512 KiB of expiry times. */
export const SLOT_GROWTH = 65_536;

export class SlotArrays {
  /** Every slot's fields, at (slot << STRIDE_SHIFT) + field; a view that tracks its buffer's length, so it is never replaced. */
  readonly fields: Int32Array;
  /** Absolute expiry on the engine's clock in ms, for slots flagged HAS_TTL; tracks its buffer's length too. */
  readonly expiresAt: Float64Array;
  /** Slots the arrays can grow to without moving: room for maxKeys (and the sentinel). */
  readonly #maxSlots: number;
  readonly #fieldBuffer: ArrayBuffer;
  readonly #expiryBuffer: ArrayBuffer;
  /** Slots ever used: 1..#top-1 (slot 0 is the sentinel). */
  #top = 1;
  #freeHead = 0;

  /** Room for slots 1..maxKeys at most: an insert at maxKeys evicts first, and freed slots are reused. */
  constructor(maxKeys: number) {
    this.#maxSlots = maxKeys + 1;
    this.#fieldBuffer = resizableBuffer(0, this.#maxSlots * SLOT_BYTES);
    this.#expiryBuffer = resizableBuffer(0, this.#maxSlots * 8);
    this.fields = new Int32Array(this.#fieldBuffer);
    this.expiresAt = new Float64Array(this.#expiryBuffer);
    this.#resize(Math.min(INITIAL_SLOTS, this.#maxSlots));
  }

  /** Slots ever used, and the sentinel: every slot in use is below this. */
  get top(): number {
    return this.#top;
  }

  /** Bytes of both arrays (what they hold, used or not). */
  get bytes(): number {
    return this.fields.byteLength + this.expiresAt.byteLength;
  }

  /** A slot for a new key: a freed one, else the next never used (growing the arrays when they are full). */
  take(): number {
    let slot = this.#freeHead;
    if (slot !== 0) {
      this.#freeHead = this.fields[(slot << STRIDE_SHIFT) + CHAIN]!;
    } else {
      slot = this.#top++;
      if (slot >= this.expiresAt.length) this.#resize(this.#afterGrowth(this.expiresAt.length));
    }
    return slot;
  }

  /** Puts a slot that no chain or list holds any more on the free list, marked free (key length 0). */
  release(slot: number): void {
    const o = slot << STRIDE_SHIFT;
    this.fields[o + META] = 0;
    this.fields[o + CHAIN] = this.#freeHead;
    this.#freeHead = slot;
  }

  /** Bytes a new key's slot would add: the arrays' next growth step when no slot is free. */
  newSlotBytes(): number {
    if (this.#freeHead !== 0 || this.#top < this.expiresAt.length) return 0;
    const room = this.expiresAt.length;
    return (this.#afterGrowth(room) - room) * (SLOT_BYTES + 8);
  }

  /** Makes room for `slots` slots in one step (a snapshot load: see KvEngine.reserve). */
  reserve(slots: number): void {
    if (slots > this.expiresAt.length) this.#resize(slots);
  }

  /** Gives back the room past what step-by-step growth would have reached for the slots used. */
  trim(): void {
    let keep = Math.min(INITIAL_SLOTS, this.#maxSlots);
    while (keep < this.#top) keep = this.#afterGrowth(keep);
    if (keep < this.expiresAt.length) this.#resize(keep);
  }

  /** Checks the free list and the arrays' room against `live` keys in use, calling `fail` on the first disagreement. */
  verify(live: number, fail: (what: string) => never): void {
    let free = 0;
    for (let s = this.#freeHead; s !== 0; s = this.fields[(s << STRIDE_SHIFT) + CHAIN]!) {
      if (this.fields[(s << STRIDE_SHIFT) + META] !== 0) fail(`free slot ${s} is in use`);
      if (++free > this.#top) fail('free list does not end');
    }
    if (live + free + 1 !== this.#top) fail(`slots leak: ${live} live + ${free} free of ${this.#top - 1}`);
    const capacity = this.expiresAt.length;
    if (this.#top > capacity || this.fields.length !== capacity << STRIDE_SHIFT || capacity > this.#maxSlots) {
      fail(`room for ${capacity} slots (${this.fields.length >> STRIDE_SHIFT} in the fields array) with ${this.#top} in use`);
    }
  }

  /** Resizes both arrays in place to `slots` slots (the buffers reserved their full size: pages are committed or given back, nothing is copied). */
  #resize(slots: number): void {
    this.#fieldBuffer.resize(slots * SLOT_BYTES);
    this.#expiryBuffer.resize(slots * 8);
  }

  /** The arrays' length after one growth step from `slots`: doubling up to SLOT_GROWTH, then SLOT_GROWTH more. */
  #afterGrowth(slots: number): number {
    return Math.min(this.#maxSlots, slots < SLOT_GROWTH ? slots * 2 : slots + SLOT_GROWTH);
  }
}
