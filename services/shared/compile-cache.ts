// Node's compile cache around a service's start, for the entry points (the store's and the
// backend's main.ts), which import nothing else statically so that the cache is on before
// their modules load: a restart reads their compiled code (and, running the TypeScript
// sources, their stripped text) instead of compiling it again. The cache lives in
// NODE_COMPILE_CACHE, else in the OS's temporary directory; NODE_DISABLE_COMPILE_CACHE=1
// turns it off (docs/configuration.md).
import { enableCompileCache, flushCompileCache } from 'node:module';

/**
 * Turns the cache on, runs `start` (the service's imports, settled once it has started or
 * failed to), then writes the cache: what this start compiled goes out now, where Node would
 * write it only at exit (never, for a process that is killed), and the caches Node read at
 * start, which it keeps until then, are freed (~0.8 MiB of malloc's heap an idle store
 * held: docs/benchmarks.md#start-up).
 */
export async function startWithCompileCache(start: () => Promise<unknown>): Promise<void> {
  enableCompileCache();
  await start();
  flushCompileCache();
}
