import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mallocMmapThreshold, MMAP_THRESHOLD_BYTES, tunablesWithThreshold } from '../services/store/runtime/malloc-tuning.ts';

const onGlibc = process.platform === 'linux' && typeof (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime === 'string';

describe('GLIBC_TUNABLES for the store', () => {
  it('adds the mmap threshold to what the environment holds, and keeps one it sets', () => {
    const ours = `glibc.malloc.mmap_threshold=${MMAP_THRESHOLD_BYTES}`;
    expect(tunablesWithThreshold(undefined)).toBe(ours);
    expect(tunablesWithThreshold('')).toBe(ours);
    expect(tunablesWithThreshold('glibc.malloc.arena_max=2')).toBe(`glibc.malloc.arena_max=2:${ours}`);
    expect(tunablesWithThreshold('glibc.malloc.arena_max=2:')).toBe(`glibc.malloc.arena_max=2:${ours}`);
    expect(tunablesWithThreshold('glibc.malloc.mmap_threshold=1048576')).toBeNull();
    expect(tunablesWithThreshold('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=0')).toBeNull();
    // A tunable whose name only starts the same is another one.
    expect(tunablesWithThreshold('glibc.malloc.mmap_threshold_x=1')).toBe(`glibc.malloc.mmap_threshold_x=1:${ours}`);
  });

  it('reads the threshold the environment sets (null without glibc, or without a number)', () => {
    const read = (t: string) => mallocMmapThreshold({ GLIBC_TUNABLES: t });
    if (!onGlibc) {
      expect(read('glibc.malloc.mmap_threshold=65536')).toBeNull();
      return;
    }
    expect(read('glibc.malloc.mmap_threshold=65536')).toBe(65536);
    expect(read('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072')).toBe(131072);
    expect(read('glibc.malloc.arena_max=2')).toBeNull();
    expect(read('glibc.malloc.mmap_threshold=big')).toBeNull();
    expect(mallocMmapThreshold({})).toBeNull();
  });

  it("the store's image sets the same threshold, so the store in a container starts without re-executing itself", () => {
    const dockerfile = readFileSync(new URL('../deploy/Dockerfile', import.meta.url), 'utf8');
    const store = dockerfile.slice(dockerfile.indexOf('FROM runtime AS store'), dockerfile.indexOf('FROM runtime AS backend'));
    expect(/^ENV GLIBC_TUNABLES=(\S+)$/m.exec(store)?.[1]).toBe(tunablesWithThreshold(undefined));
  });
});
