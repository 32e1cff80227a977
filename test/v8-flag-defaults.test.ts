import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { flagGiven } from '../services/store/runtime/v8-flag-defaults.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/young-generation-growth.ts', import.meta.url));
const youngGeneration = (mode: string): { before: number; largest: number } =>
  JSON.parse(execFileSync(process.execPath, [FIXTURE, mode], { encoding: 'utf8', timeout: 60_000 })) as { before: number; largest: number };

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

describe("the store's young generation", () => {
  it('stays small under a steady allocation with objects in flight, where V8 would grow it to tens of MiB', () => {
    const v8 = youngGeneration('v8-defaults');
    const store = youngGeneration('store-defaults');
    expect(v8.largest).toBeGreaterThan(4 * v8.before);
    // Without the launch flag's bound V8 still grows it a little when nearly all of it
    // survives, as here (v8-flag-defaults.ts), and new space commits a few of its 256 KiB
    // pages beyond its semi-spaces for a moment while a scavenge moves them: 7.25 to 8.5 MiB
    // over 32 runs here, where V8's own defaults reach 64 MiB.
    expect(store.largest).toBeLessThanOrEqual(8 * 2 ** 20 + 4 * 256 * 2 ** 10);
    expect(store.largest).toBeLessThan(v8.largest / 4);
  });
});
