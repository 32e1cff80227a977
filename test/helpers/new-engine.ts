import { KvEngine, type KvEngineOptions } from '../../services/store/engine/kv-engine.ts';

/**
 * An engine for suites that make thousands of them (model-based properties). A dead
 * engine's reserved address space (and its mappings: vm.max_map_count is 65,530) goes
 * back only when the collector runs, and little else in such a suite makes garbage for it
 * to run on: runs failed with `ArrayBuffer.prototype.resize: Out of memory` after
 * hundreds of engines. So the collector is run every ENGINES_PER_COLLECTION engines
 * (vitest.config.ts gives the workers --expose-gc).
 */
const ENGINES_PER_COLLECTION = 200;
let enginesMade = 0;

export function newEngine(options: KvEngineOptions): KvEngine {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('newEngine needs --expose-gc (vitest.config.ts execArgv)');
  if (++enginesMade % ENGINES_PER_COLLECTION === 0) gc();
  return new KvEngine(options);
}
