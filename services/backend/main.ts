// The backend's entry point: `node services/backend/main.ts` (dist/backend/main.js in the image).
//
// It imports none of the backend's modules statically, so that Node's compile cache is on
// before they load, as in the store's main.ts: a restart reads their compiled code from the
// cache instead of compiling them again. The cache lives in NODE_COMPILE_CACHE, else in the
// OS's temporary directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off (docs/configuration.md).
import { enableCompileCache, flushCompileCache } from 'node:module';

enableCompileCache();
await import('./run-backend.ts');
// The service has started (or failed to): its modules are loaded. Flushing writes what
// this start compiled, where Node would write it only at exit (never, for a process that is
// killed), and frees the caches Node read at start, which it keeps until then (~0.8 MiB
// of malloc's heap an idle store holds: docs/benchmarks.md#start-up).
flushCompileCache();
