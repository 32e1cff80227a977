// Binary search over sorted data, for the bench's traces.

/**
 * How many of the first elements of a sorted sequence of `length` satisfy `before`, which
 * holds for a leading run of them and not after it: the index of the first that does not.
 */
export function partitionPoint(length: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
