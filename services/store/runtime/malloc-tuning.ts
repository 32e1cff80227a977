// The store's records live in plain ArrayBuffers (engine/record-arena.ts), which Node allocates
// with malloc. glibc maps an allocation at or above its mmap threshold on its own and
// unmaps it when freed, so its memory leaves the process at once; below the threshold it
// comes from the heap, whose freed holes stay resident. The threshold starts at 128 KiB,
// but glibc raises it to the size of each larger mapped block that is freed (up to 32 MiB),
// so after the first freed page the arena's pages would come from the heap and stay
// resident once freed (docs/benchmarks.md#memory-under-churn). A threshold that is set,
// rather than left to glibc, is fixed.
//
// The store sets it at start-up in one of three ways, the first that applies:
// - its environment's GLIBC_TUNABLES holds `glibc.malloc.mmap_threshold` (the image sets
//   it): glibc read it when the process started, and the operator's value is kept;
// - the native add-on calls mallopt(M_MMAP_THRESHOLD), which fixes the threshold as the
//   tunable does, in this process, before the store's modules run;
// - without the add-on, the process replaces itself (execve: same PID, same arguments) with
//   the tunable added, which costs a second boot of Node.
// Elsewhere (musl, macOS) large blocks are mapped anyway, and nothing is done.

import { fs } from '../../shared/builtins.ts';
import { MIN_PAGE_TARGET } from '../engine/record-arena.ts';
import { loadSocketIo } from '../network/native-io.ts';

/** The arena's smallest page: every page, and every large record, is mapped on its own. */
export const MMAP_THRESHOLD_BYTES = MIN_PAGE_TARGET;
const TUNABLE = 'glibc.malloc.mmap_threshold';
/** glibc's malloc.h: mallopt's parameter for the mmap threshold. */
const M_MMAP_THRESHOLD = -3;

/**
 * One malloc arena for every thread. By default glibc gives each thread that mallocs an
 * arena of its own, and V8's worker threads (concurrent marking, sweeping, compiling) keep
 * what they freed in theirs until the idle trim: under a churn of short connections one
 * held ~25 MiB at the peak. With one arena the main thread reuses it: peaks of +55 to +77
 * MiB over idle against +69 to +85 (docs/benchmarks.md#connection-churn), throughput at
 * depth 1 and 16 the same within the runs' spread. glibc reads the tunable as the process
 * starts (the image sets it); mallopt at start-up bounds only the arenas made after it, as
 * V8's threads may have theirs already.
 */
const ARENA_TUNABLE = 'glibc.malloc.arena_max';
export const MALLOC_ARENAS = 1;
/** glibc's malloc.h: mallopt's parameter for the most arenas. */
const M_ARENA_MAX = -8;

/** The GLIBC_TUNABLES the store's image sets: the mmap threshold and one arena. */
export const IMAGE_TUNABLES = `${TUNABLE}=${MMAP_THRESHOLD_BYTES}:${ARENA_TUNABLE}=${MALLOC_ARENAS}`;

/**
 * What a launcher that starts the store as its image does (`npm start`, the benches'
 * compiled store) adds to the store's environment `env`: the image's GLIBC_TUNABLES, which
 * glibc reads only as the process starts, unless `env` sets its own (an operator's, kept).
 */
export function imageTunablesFor(env: NodeJS.ProcessEnv): { GLIBC_TUNABLES?: string } {
  return env.GLIBC_TUNABLES === undefined ? { GLIBC_TUNABLES: IMAGE_TUNABLES } : {};
}

/** Whether GLIBC_TUNABLES (`current`) sets the tunable `name`, whatever its value. */
function setsTunable(current: string | undefined, name: string): boolean {
  return (current ?? '').split(':').some((t) => t.split('=')[0] === name);
}

/** The number the environment's GLIBC_TUNABLES gives the tunable `name`, as glibc read it; null without glibc, the tunable or a number. */
function tunableNumber(env: NodeJS.ProcessEnv, name: string): number | null {
  if (!onGlibc()) return null;
  for (const t of (env.GLIBC_TUNABLES ?? '').split(':')) {
    const [key, value] = t.split('=');
    if (key === name && value !== undefined && /^\d+$/.test(value)) return Number(value);
  }
  return null;
}

/** The arena limit glibc read from the environment's GLIBC_TUNABLES; null without glibc or without the tunable. */
export function mallocArenaMax(env: NodeJS.ProcessEnv = process.env): number | null {
  return tunableNumber(env, ARENA_TUNABLE);
}

/** The arena limit mallopt set in this process, if it did. */
let arenasByMallopt: number | null = null;

/** Limits malloc to MALLOC_ARENAS with mallopt, unless the environment's GLIBC_TUNABLES sets a limit (the operator's, kept). */
export function limitMallocArenas(mallopt: Mallopt = addonMallopt(), env: NodeJS.ProcessEnv = process.env): void {
  if (!onGlibc()) return;
  if (setsTunable(env.GLIBC_TUNABLES, ARENA_TUNABLE)) return;
  if (mallopt?.(M_ARENA_MAX, MALLOC_ARENAS) === 1) arenasByMallopt = MALLOC_ARENAS;
}

/**
 * The arena limit this process runs with and what set it (the environment: every thread
 * bound; mallopt: the threads that took an arena before it keep theirs); null when none.
 */
export function appliedMallocArenaMax(): { readonly arenas: number; readonly source: MallocSettingSource } | null {
  const arenas = mallocArenaMax();
  if (arenas !== null) return { arenas, source: 'environment' };
  return arenasByMallopt === null ? null : { arenas: arenasByMallopt, source: 'mallopt' };
}

/** How one of this process's malloc settings was set: by its environment (GLIBC_TUNABLES) or by mallopt at start-up. */
export type MallocSettingSource = 'environment' | 'mallopt';

/** GLIBC_TUNABLES with the store's threshold added, or null when `current` already sets a threshold. */
export function tunablesWithThreshold(current: string | undefined): string | null {
  if (setsTunable(current, TUNABLE)) return null;
  return [...(current ?? '').split(':').filter((t) => t !== ''), `${TUNABLE}=${MMAP_THRESHOLD_BYTES}`].join(':');
}

/** The mmap threshold glibc runs with in this process, as its environment set it; null without glibc or without the tunable. */
export function mallocMmapThreshold(env: NodeJS.ProcessEnv = process.env): number | null {
  return tunableNumber(env, TUNABLE);
}

/**
 * Whether a process with these mappings (/proc/<pid>/maps) runs on glibc: it maps glibc's
 * shared library, libc.so.6 (musl's is ld-musl-<arch>.so.1). The maps are read rather than
 * process.report's glibcVersionRuntime, whose report costs ~2 ms and ~2 MiB of idle RSS.
 */
export function mapsShowGlibc(maps: string): boolean {
  return /\/libc\.so\.6$/m.test(maps);
}

/** Whether this process runs on glibc; asked once. */
let glibc: boolean | undefined;
function onGlibc(): boolean {
  if (glibc === undefined) {
    let maps = '';
    try {
      if (process.platform === 'linux') maps = fs.readFileSync('/proc/self/maps', 'latin1');
    } catch {
      // No /proc: nothing is known of the C library, and nothing is done.
    }
    glibc = mapsShowGlibc(maps);
  }
  return glibc;
}

/** The threshold mallopt set in this process, if it did. */
let setByMallopt: number | null = null;

/** The threshold this process runs with and what set it; null when none is fixed (not glibc, or nothing could set it). */
export function appliedMallocThreshold(): { readonly bytes: number; readonly source: MallocSettingSource } | null {
  if (setByMallopt !== null) return { bytes: setByMallopt, source: 'mallopt' };
  const bytes = mallocMmapThreshold();
  return bytes === null ? null : { bytes, source: 'environment' };
}

/** A mallopt call, or undefined when the add-on is not built (or was built without it). */
export type Mallopt = ((param: number, value: number) => number) | undefined;

function addonMallopt(): Mallopt {
  const loaded = loadSocketIo();
  const io = 'io' in loaded ? loaded.io : undefined;
  return io?.mallopt?.bind(io);
}

/**
 * Fixes glibc's mmap threshold for this process when its environment did not: with
 * mallopt when the add-on has it, else by replacing this process with itself,
 * GLIBC_TUNABLES holding the threshold. Returns only when that was not needed, or when
 * mallopt did it (or when neither mallopt nor execve is at hand: the store then takes its
 * pages from the serving thread).
 */
export function ensureMallocMmapThreshold(mallopt: Mallopt = addonMallopt()): void {
  if (!onGlibc()) return;
  const tunables = tunablesWithThreshold(process.env.GLIBC_TUNABLES);
  if (tunables === null) return;
  if (mallopt?.(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) === 1) {
    setByMallopt = MMAP_THRESHOLD_BYTES;
    return;
  }
  if (typeof process.execve !== 'function') return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, GLIBC_TUNABLES: tunables });
}
