import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSocketIo } from '../services/store/network/native-io.ts';
import {
  appliedMallocThreshold,
  ensureMallocMmapThreshold,
  IMAGE_TUNABLES,
  imageTunablesFor,
  limitMallocArenas,
  MALLOC_ARENAS,
  mallocArenaMax,
  mallocMmapThreshold,
  mapsShowGlibc,
  MMAP_THRESHOLD_BYTES,
  tunablesWithThreshold,
} from '../services/store/runtime/malloc-tuning.ts';
import { storeEnvDefaults } from '../bench/harness/services.ts';

const onGlibc = process.platform === 'linux' && typeof (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime === 'string';

describe('GLIBC_TUNABLES for the store', () => {
  it("tells glibc from its mappings as the diagnostic report's glibc version does", () => {
    const maps = process.platform === 'linux' ? readFileSync('/proc/self/maps', 'latin1') : '';
    expect(mapsShowGlibc(maps)).toBe(onGlibc);
    expect(mapsShowGlibc('7f1c2a000000-7f1c2a028000 r--p 00000000 fe:00 339380    /usr/lib/x86_64-linux-gnu/libc.so.6\n')).toBe(true);
    expect(mapsShowGlibc('7f1c2a000000-7f1c2a028000 r--p 00000000 fe:00 1234      /lib/ld-musl-x86_64.so.1\n')).toBe(false);
    expect(mapsShowGlibc('7f1c2a000000-7f1c2a028000 r--p 00000000 fe:00 1234      /opt/libc.so.6.bak\n')).toBe(false);
    expect(mapsShowGlibc('')).toBe(false);
  });

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

  it("the store's image sets the same threshold, so the store in a container starts without re-executing itself, and one arena", () => {
    const dockerfile = readFileSync(new URL('../deploy/Dockerfile', import.meta.url), 'utf8');
    const store = dockerfile.slice(dockerfile.indexOf('FROM runtime AS store'), dockerfile.indexOf('FROM runtime AS backend'));
    expect(/^ENV GLIBC_TUNABLES=(\S+)$/m.exec(store)?.[1]).toBe(IMAGE_TUNABLES);
    expect(IMAGE_TUNABLES.startsWith(`${tunablesWithThreshold(undefined)}:`)).toBe(true);
    expect(IMAGE_TUNABLES.endsWith(`glibc.malloc.arena_max=${MALLOC_ARENAS}`)).toBe(true);
  });

  it("the benches run a compiled store with the image's tunables, as the image does, and the sources as npm start does", () => {
    expect(storeEnvDefaults(true, {}).GLIBC_TUNABLES).toBe(IMAGE_TUNABLES);
    expect(storeEnvDefaults(false, {})).not.toHaveProperty('GLIBC_TUNABLES');
    // An operator's own tunables, in the environment the store inherits, are kept.
    expect(storeEnvDefaults(true, { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' })).not.toHaveProperty('GLIBC_TUNABLES');
    expect(imageTunablesFor({ GLIBC_TUNABLES: '' })).toEqual({});
    expect(imageTunablesFor({})).toEqual({ GLIBC_TUNABLES: IMAGE_TUNABLES });
  });

  it('reads the arena limit the environment sets (null without glibc, or without a number)', () => {
    const read = (t: string) => mallocArenaMax({ GLIBC_TUNABLES: t });
    if (!onGlibc) {
      expect(read('glibc.malloc.arena_max=1')).toBeNull();
      return;
    }
    expect(read('glibc.malloc.arena_max=1')).toBe(1);
    expect(read('glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_max=4')).toBe(4);
    expect(read('glibc.malloc.mmap_threshold=65536')).toBeNull();
    expect(read('glibc.malloc.arena_max=many')).toBeNull();
    expect(mallocArenaMax({})).toBeNull();
  });

  it("limits malloc's arenas with mallopt when the environment sets no limit, and keeps an operator's", () => {
    const calls: number[][] = [];
    const mallopt = (param: number, value: number): number => (calls.push([param, value]), 1);
    limitMallocArenas(mallopt, { GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' });
    expect(calls).toEqual([]);
    limitMallocArenas(mallopt, { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' });
    limitMallocArenas(mallopt, {});
    expect(calls).toEqual(onGlibc ? [[-8, MALLOC_ARENAS], [-8, MALLOC_ARENAS]] : []); // M_ARENA_MAX
  });

  it('sets the threshold with mallopt when the environment lacks it, and asks nothing when it has it', () => {
    const calls: number[][] = [];
    const mallopt = (param: number, value: number): number => (calls.push([param, value]), 1);
    ensureMallocMmapThreshold(mallopt);
    if (!onGlibc) {
      expect(calls).toEqual([]);
      expect(appliedMallocThreshold()).toBeNull();
    } else if (mallocMmapThreshold() !== null) {
      expect(calls).toEqual([]); // this process's environment set it: kept
      expect(appliedMallocThreshold()).toEqual({ bytes: mallocMmapThreshold(), source: 'environment' });
    } else {
      expect(calls).toEqual([[-3, MMAP_THRESHOLD_BYTES]]); // M_MMAP_THRESHOLD
      expect(appliedMallocThreshold()).toEqual({ bytes: MMAP_THRESHOLD_BYTES, source: 'mallopt' });
    }
  });

  it("the add-on's mallopt takes the threshold (glibc), so the store starts without a second boot", (ctx) => {
    const loaded = loadSocketIo();
    if (!('io' in loaded) || !onGlibc) return ctx.skip();
    expect(loaded.io.mallopt?.(-3, MMAP_THRESHOLD_BYTES)).toBe(1);
  });

  it('without mallopt, the process replaces itself (same PID) with the tunable added', (ctx) => {
    if (!onGlibc) return ctx.skip();
    const env: NodeJS.ProcessEnv = { ...process.env, GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' };
    const fixture = fileURLToPath(new URL('./fixtures/malloc-threshold-fallback.ts', import.meta.url));
    const run = spawnSync(process.execPath, [fixture], { env, encoding: 'utf8' });
    expect(run.status).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1); // only the replacement got as far as printing
    const out = JSON.parse(lines[0]!) as { pid: number; tunables: string; applied: unknown };
    expect(out.pid).toBe(run.pid);
    expect(out.tunables).toBe(tunablesWithThreshold('glibc.malloc.arena_max=4'));
    expect(out.applied).toEqual({ bytes: MMAP_THRESHOLD_BYTES, source: 'environment' });
  });
});
