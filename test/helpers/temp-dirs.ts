// Fresh directories and files under one temporary root per test file, removed after its tests.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/** A function that writes `text` into the file `name` under one temporary directory (named by `prefix`) and returns its path; `.dir` is that directory. */
export function tempFiles(prefix: string): ((name: string, text: string) => string) & { readonly dir: string } {
  const dir = tempDirs(prefix)();
  const write = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  return Object.assign(write, { dir });
}
