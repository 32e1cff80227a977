// A bit per hash value's top bits, set for every key inserted while a snapshot loads
// (Keyspace.reserve to endReserve), so an insert whose bit is clear skips the chain walk for
// a key that cannot be there: a chain's slots are random reads, while the filter, a byte per
// key, stays in cache. A set bit only means "look": removals leave their bits set. Scratch
// for the load, as its read buffers are: not part of the footprint.

export class NewKeyFilter {
  readonly #bits: Uint8Array;
  /** h >>> #shift indexes a bit of #bits. */
  readonly #shift: number;

  /**
   * A filter for a table of `buckets` buckets holding about as many keys: 8 bits per key,
   * so an insert of a new key finds its bit set (and walks the chain) at most
   * 1 - e^(-1/8) = 12% of the time, at the end of the load.
   */
  constructor(buckets: number) {
    const bits = Math.min(31, Math.log2(buckets) + 3);
    this.#bits = new Uint8Array(2 ** bits / 8);
    this.#shift = 32 - bits;
  }

  /** Marks the hash seen; true when it may have been seen before (the key may be there: look). */
  mayHold(h: number): boolean {
    const bit = h >>> this.#shift;
    const mask = 1 << (bit & 7);
    const byte = this.#bits[bit >>> 3]!;
    if ((byte & mask) !== 0) return true;
    this.#bits[bit >>> 3] = byte | mask;
    return false;
  }
}
