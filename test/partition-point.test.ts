// bench/harness/partition-point.ts: the binary search the bench's traces use.
import { describe, expect, it } from 'vitest';
import { partitionPoint } from '../bench/harness/partition-point.ts';

describe('partitionPoint', () => {
  it('counts the leading elements that satisfy the test: the index of the first that does not', () => {
    const sorted = [1, 2, 2, 2, 5, 8];
    expect(partitionPoint(sorted.length, (i) => sorted[i]! < 2)).toBe(1);
    expect(partitionPoint(sorted.length, (i) => sorted[i]! <= 2)).toBe(4);
    expect(partitionPoint(sorted.length, (i) => sorted[i]! < 0)).toBe(0);
    expect(partitionPoint(sorted.length, (i) => sorted[i]! < 100)).toBe(sorted.length);
    expect(partitionPoint(0, () => true)).toBe(0);
  });
});
