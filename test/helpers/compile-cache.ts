import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The entries of Node's compile cache a service run with TMPDIR=`tmpdir` (and no NODE_COMPILE_CACHE) has written: 0 before the first. */
export function compileCacheEntries(tmpdir: string): number {
  try {
    return readdirSync(join(tmpdir, 'node-compile-cache'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
  } catch {
    return 0;
  }
}
