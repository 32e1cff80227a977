import { describe, expect, it } from 'vitest';
import { median, medianWithRange } from '../bench/harness/median.ts';

describe("the benches' medians", () => {
  it('take the lower middle of an even count, so the figure reported is one that was measured', () => {
    expect(median([4, 1, 3, 2])).toBe(2);
    expect(median([5, undefined, 1, 3])).toBe(3);
    expect(median([])).toBeUndefined();
  });

  it('say a median with its range, leaving out the rounds without a figure', () => {
    expect(medianWithRange([1.234, 0.98, undefined, 1.1], 2)).toBe('1.10 (0.98–1.23)');
    expect(medianWithRange([140683, 136300])).toBe('136300 (136300–140683)');
    expect(medianWithRange([undefined])).toBe('–');
  });
});
