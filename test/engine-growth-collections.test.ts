import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STORE_NODE_FLAGS } from '../services/store/runtime/launch-flags.ts';

const fixture = fileURLToPath(new URL('./fixtures/engine-growth-collections.ts', import.meta.url));

/** Full collections while an engine grows by `mib` MiB of values, in a fresh process (with the store's launch flags for `store-defaults`). */
function fullCollections(mode: 'store-defaults' | 'v8-defaults', mib: number): number {
  const run = spawnSync(process.execPath, [...(mode === 'store-defaults' ? STORE_NODE_FLAGS : []), fixture, mode, String(mib)], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  const result = JSON.parse(run.stdout.trim()) as { keys: number; fullCollections: number };
  expect(result.keys).toBe(mib * 16);
  return result.fullCollections;
}

describe("the engine's growth and V8's full collections", () => {
  // V8 counts every ArrayBuffer (all of the engine's data) as external memory, and by its
  // own rule starts a full collection each time that count has grown 64 MiB, whether or not
  // anything can be freed; the store's defaults put the count into the heap's limit, which
  // grows with it (v8-flag-defaults.ts). A count, not a time: it does not depend on the machine.
  it('growing by 512 MiB starts a few full collections with the store\'s V8 defaults, one per 64 MiB without', () => {
    const withDefaults = fullCollections('store-defaults', 512);
    const without = fullCollections('v8-defaults', 512);
    expect(without).toBeGreaterThanOrEqual(6);
    expect(withDefaults).toBeLessThanOrEqual(3);
  });
});
