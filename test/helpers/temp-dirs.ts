// Fresh directories under one temporary root per test file, removed after its tests.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A function that makes a new empty directory each call, all under one root named by `prefix`. */
export function tempDirs(prefix: string): () => string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  let made = 0;
  return () => {
    const dir = join(root, String(made++));
    mkdirSync(dir);
    return dir;
  };
}
