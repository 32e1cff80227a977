/**
 * Below this many bytes a copy is a loop in JavaScript; above it, Buffer#copy, whose
 * call costs more than a short loop.
 */
export const NATIVE_COPY_BYTES = 64;

/**
 * Copies src[from, to) to dst at `at` and returns the end. No view is made: a subarray
 * per copy (of an arena page) lands in V8's old space, and copies
 * made per record would start full collections.
 */
export function copyBytes(src: Buffer, from: number, to: number, dst: Buffer, at: number): number {
  if (to - from > NATIVE_COPY_BYTES) return at + src.copy(dst, at, from, to);
  for (let i = from; i < to; i++) dst[at++] = src[i]!;
  return at;
}
