// The store's records live in plain ArrayBuffers (record-arena.ts), which Node allocates
// with malloc. glibc maps an allocation at or above its mmap threshold on its own and
// unmaps it when freed, so its memory leaves the process at once; below the threshold it
// comes from the heap, whose freed holes stay resident. The threshold starts at 128 KiB,
// but glibc raises it to the size of each larger mapped block that is freed (up to 32 MiB),
// so after the first freed page the arena's pages would come from the heap: measured, 1 MiB
// pages allocated and freed by halves kept all their memory resident from the second round
// on. A threshold given as a tunable is fixed. The store therefore starts with
// GLIBC_TUNABLES holding `glibc.malloc.mmap_threshold`: when its environment lacks it, the
// process replaces itself (execve: same PID, same arguments) with the tunable added.
// Elsewhere (musl, macOS) large blocks are mapped anyway, and nothing is done.

import { report } from 'node:process';
import { MIN_PAGE_TARGET } from '../engine/record-arena.ts';

/** The arena's smallest page: every page, and every large record, is mapped on its own. */
export const MMAP_THRESHOLD_BYTES = MIN_PAGE_TARGET;
const TUNABLE = 'glibc.malloc.mmap_threshold';

/** GLIBC_TUNABLES with the store's threshold added, or null when `current` already sets a threshold. */
export function tunablesWithThreshold(current: string | undefined): string | null {
  const set = (current ?? '').split(':').filter((t) => t !== '');
  if (set.some((t) => t.split('=')[0] === TUNABLE)) return null;
  return [...set, `${TUNABLE}=${MMAP_THRESHOLD_BYTES}`].join(':');
}

/** The mmap threshold glibc runs with in this process, as its environment set it; null without glibc or without the tunable. */
export function mallocMmapThreshold(env: NodeJS.ProcessEnv = process.env): number | null {
  if (!onGlibc()) return null;
  for (const t of (env.GLIBC_TUNABLES ?? '').split(':')) {
    const [name, value] = t.split('=');
    if (name === TUNABLE && value !== undefined && /^\d+$/.test(value)) return Number(value);
  }
  return null;
}

/** Whether this process runs on glibc; asked once, since the answer is a whole diagnostic report. */
let glibc: boolean | undefined;
function onGlibc(): boolean {
  if (glibc === undefined) {
    const header = process.platform === 'linux' ? (report.getReport() as { header?: { glibcVersionRuntime?: string } }).header : undefined;
    glibc = typeof header?.glibcVersionRuntime === 'string';
  }
  return glibc;
}

/**
 * Replaces this process with itself, GLIBC_TUNABLES holding the threshold, when it runs
 * on glibc without one. Returns only when nothing needed doing (or execve is missing).
 */
export function ensureMallocMmapThreshold(): void {
  if (!onGlibc()) return;
  const tunables = tunablesWithThreshold(process.env.GLIBC_TUNABLES);
  if (tunables === null || typeof process.execve !== 'function') return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, GLIBC_TUNABLES: tunables });
}
