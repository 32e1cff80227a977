import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/arena-page-maps.ts', import.meta.url));

describe('record arena pages and V8', () => {
  // A page made with Buffer.from(resizable buffer) had a hidden class of its own, and the
  // engine's loads from pages of several size classes went megamorphic (record-arena.ts,
  // bufferOver). V8's own check, %HaveSameMap, needs a flag: so it runs in a child process.
  it('every page, of every size class and of large records, shares one hidden class, and is a Buffer', () => {
    const run = spawnSync(process.execPath, ['--allow-natives-syntax', fixture], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout.trim()) as { pages: number; sameMap: boolean[]; buffers: boolean };
    expect(result.pages).toBe(10);
    expect(result.sameMap).toEqual(Array(10).fill(true));
    expect(result.buffers).toBe(true);
  });
});
