// The store's entry point: `node services/store/main.ts` (dist/store/main.js in the image).
//
// It imports none of the store's modules statically, so that two things come before they
// load. Node's compile cache is turned on: a restart reads the ~300 modules' compiled code
// (and, running the TypeScript sources, their stripped text) from the cache instead of
// compiling them again, which is most of an empty store's start-up
// (docs/benchmarks.md#start-up). And malloc's mmap threshold is fixed
// (malloc-tuning.ts): where that takes a second boot, the process replaces itself before
// loading the rest. The cache lives in NODE_COMPILE_CACHE, else in the OS's temporary
// directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off (docs/configuration.md).
import { enableCompileCache, flushCompileCache } from 'node:module';

enableCompileCache();
await import('./runtime/with-malloc-threshold.ts');
await import('./run-store.ts');
// The service has started (or failed to): its modules are loaded. Flushing writes what
// this start compiled, where Node would write it only at exit (never, for a process that is
// killed), and frees the caches Node read at start, which it keeps until then (~0.8 MiB
// of malloc's heap an idle store holds: docs/benchmarks.md#start-up).
flushCompileCache();
