// MurmurHash3 x86_32 (Austin Appleby, public domain), the hash of the shard ring.
// Chosen because it is short, fast on 32-bit integer arithmetic (JavaScript has no cheap
// 64-bit multiply) and already implemented in every language a client might be written
// in, under the same name and with the same test vectors.

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** The MurmurHash3 finaliser: a bijection on 32 bits with full avalanche. Unsigned result. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** murmur3's scramble of one 32-bit block (k1 in the reference). */
const scramble = (k: number): number => Math.imul(rotl(Math.imul(k, C1), 15), C2);
const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));

/** One whole block into the state. */
const mixBlock = (h: number, k: number): number => (Math.imul(rotl(h ^ scramble(k), 13), 5) + 0xe6546b64) | 0;

/** MurmurHash3_x86_32 of bytes[start, end) with a 32-bit seed; blocks are read little-endian. Unsigned result. */
export function murmur3_32(bytes: Uint8Array, start = 0, end = bytes.length, seed = 0): number {
  let h = seed | 0;
  const len = end - start;
  const blocksEnd = start + (len & ~3);
  let i = start;
  for (; i < blocksEnd; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    h = mixBlock(h, k);
  }
  const tail = len & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= bytes[i + 2]! << 16;
    if (tail >= 2) k ^= bytes[i + 1]! << 8;
    k ^= bytes[i]!;
    h ^= scramble(k);
  }
  return fmix32(h ^ len);
}

/**
 * murmur3_32 of the bytes [start, end) of a view, each block one 32-bit load instead of
 * four byte loads: the store engine's key hash, where the loads are the cost and the view
 * of the command line is made once per read. Unsigned result, equal to murmur3_32's of the
 * same bytes. murmur3_32 keeps its own loop: made to call this, it would need a view of
 * every key buffer it is given, which costs more than the hash (bench/ring-bench.ts; see
 * docs/benchmarks.md#sharding-cost).
 */
export function murmur3_32View(view: DataView, start: number, end: number, seed: number): number {
  let h = seed | 0;
  const len = end - start;
  const blocksEnd = start + (len & ~3);
  let i = start;
  for (; i < blocksEnd; i += 4) h = mixBlock(h, view.getInt32(i, true));
  const tail = len & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= view.getUint8(i + 2) << 16;
    if (tail >= 2) k ^= view.getUint8(i + 1) << 8;
    k ^= view.getUint8(i);
    h ^= scramble(k);
  }
  return fmix32(h ^ len);
}

// Keys held as JS strings (HTTP paths, CLI arguments) are hashed from their UTF-8
// encoding computed on the fly, byte for byte what murmur3_32(Buffer.from(text)) sees,
// without allocating or calling into native code (which costs more than the hash).
// An ASCII string is its own UTF-8 and takes the fast path, four characters a block.

/** murmur3_32 of the UTF-8 bytes of a string (a lone surrogate counts as U+FFFD, as in Buffer.from). */
export function murmur3_32Utf8(text: string, seed = 0): number {
  let h = seed | 0;
  const len = text.length;
  const blocksEnd = len & ~3;
  let i = 0;
  for (; i < blocksEnd; i += 4) {
    const c0 = text.charCodeAt(i);
    const c1 = text.charCodeAt(i + 1);
    const c2 = text.charCodeAt(i + 2);
    const c3 = text.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) >= 0x80) return murmur3_32Utf8Encoded(text, seed);
    let k = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24);
    h = mixBlock(h, k);
  }
  const tail = len & 3;
  if (tail > 0) {
    let k = 0;
    let any = 0;
    if (tail === 3) {
      const c = text.charCodeAt(i + 2);
      any |= c;
      k ^= c << 16;
    }
    if (tail >= 2) {
      const c = text.charCodeAt(i + 1);
      any |= c;
      k ^= c << 8;
    }
    const c = text.charCodeAt(i);
    any |= c;
    if (any >= 0x80) return murmur3_32Utf8Encoded(text, seed);
    k ^= c;
    h ^= scramble(k);
  }
  return fmix32(h ^ len);
}

/** The general case: each code point's UTF-8 bytes fed into the blocks one by one. */
function murmur3_32Utf8Encoded(text: string, seed: number): number {
  let h = seed | 0;
  let k = 0; // the block being filled, little-endian
  let filled = 0; // bytes in k
  let len = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    let bytes: number; // the code point's UTF-8 bytes, the first in the lowest 8 bits
    let count: number;
    if (c < 0x80) {
      bytes = c;
      count = 1;
    } else if (c < 0x800) {
      bytes = (0xc0 | (c >> 6)) | ((0x80 | (c & 0x3f)) << 8);
      count = 2;
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = i + 1 < n ? text.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          i++;
        } else {
          c = 0xfffd; // a lone surrogate, as Buffer.from encodes it
        }
      }
      if (c < 0x10000) {
        bytes = (0xe0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3f)) << 8) | ((0x80 | (c & 0x3f)) << 16);
        count = 3;
      } else {
        bytes = (0xf0 | (c >> 18)) | ((0x80 | ((c >> 12) & 0x3f)) << 8) | ((0x80 | ((c >> 6) & 0x3f)) << 16) | ((0x80 | (c & 0x3f)) << 24);
        count = 4;
      }
    }
    len += count;
    for (let j = 0; j < count; j++) {
      k |= (bytes & 0xff) << (filled * 8);
      bytes >>>= 8;
      if (++filled === 4) {
        h = mixBlock(h, k);
        k = 0;
        filled = 0;
      }
    }
  }
  if (filled > 0) {
    h ^= scramble(k);
  }
  return fmix32(h ^ len);
}
