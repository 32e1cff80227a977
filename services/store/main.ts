// The store's entry point: `node services/store/main.ts` (dist/store/main.js in the image).
//
// It imports none of the store's modules statically, so that two things come before they
// load. Node's compile cache is turned on (shared/compile-cache.ts): a restart reads the
// ~300 modules' compiled code from the cache, which is most of an empty store's start-up
// (docs/benchmarks.md#start-up). And malloc's mmap threshold is fixed
// (malloc-tuning.ts): where that takes a second boot, the process replaces itself before
// loading the rest.
import { startWithCompileCache } from '../shared/compile-cache.ts';

await startWithCompileCache(async () => {
  await import('./runtime/with-malloc-threshold.ts');
  await import('./run-store.ts');
});
