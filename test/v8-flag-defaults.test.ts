import { describe, expect, it } from 'vitest';
import { flagGiven } from '../services/store/runtime/v8-flag-defaults.ts';

describe('the store\'s V8 flag defaults yield to the command line', () => {
  it('finds the flag with a value, in either spelling', () => {
    const flag = '--heap-growing-percent=500';
    expect(flagGiven(flag, ['--heap-growing-percent=300'])).toBe(true);
    expect(flagGiven(flag, ['--heap_growing_percent=300'])).toBe(true);
    expect(flagGiven(flag, ['--heap-growing-percent', '300'])).toBe(true);
    expect(flagGiven(flag, ['--heap-growing-factor=2', '--max-old-space-size=512'])).toBe(false);
    expect(flagGiven(flag, [])).toBe(false);
  });

  it('finds a boolean flag set either way, and not one that only starts with its name', () => {
    const flag = '--no-memory-reducer';
    expect(flagGiven(flag, ['--memory-reducer'])).toBe(true);
    expect(flagGiven(flag, ['--no-memory_reducer'])).toBe(true);
    expect(flagGiven(flag, ['--memory-reducer-for-small-heaps'])).toBe(false);
    expect(flagGiven(flag, ['--trace-memory-reducer'])).toBe(false);
  });
});
