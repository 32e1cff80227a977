// Full garbage collections for a store that stands idle (run by idle-malloc-trim.ts
// before the first trims of an idle spell).
//
// What a busy store leaves for the collector stays resident until V8 collects: buffers of
// replies a client closed its connection on before they were written, closed connections'
// sockets, the heap's own garbage. Under load V8 collects often enough; once the store goes
// quiet nothing allocates, so nothing starts a collection, and the memory reducer (the
// serving isolate keeps it) waits for seconds of idleness first. A collection on an idle
// store pauses no client that is not there (one that arrives then waits for it, as for any
// collection: see IDLE_COLLECTION_PASSES), and the trim that follows hands what it freed to
// the OS.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/**
 * Passes an idle spell takes, a trim apart: the first frees the dead objects and leaves
 * their ArrayBuffers to V8's sweeper, which frees the memory behind them at the second. One
 * at a time, because each is a pause of its own (10-17 ms on an idle store's ~10 MB heap,
 * compiled, the machine quiet); both at once would be twice that.
 */
export const IDLE_COLLECTION_PASSES = 2;

/**
 * Runs one full collection. V8's gc() function is taken once, from a context made with
 * --expose-gc set (the flag exposes it only in contexts made after it is set, so the
 * store's own globals stay as they were).
 */
export function collectIdleGarbage(): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}
