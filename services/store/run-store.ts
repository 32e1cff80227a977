// The store's process (main.ts is its entry point): its V8 defaults, its threads'
// priorities, and the service, run until a signal stops it.
import { loadStoreConfig } from '../config/config.ts';
import { runService } from '../shared/run-service.ts';
import { lowerV8WorkerPriority } from './runtime/background-thread-priority.ts';
import { startStoreService } from './store-service.ts';
import { defaultV8Flag } from './runtime/v8-flag-defaults.ts';
import { missingLaunchFlags } from './runtime/launch-flags.ts';

/** Ms from the process's start until its modules were loaded: Node's own start-up and the store's code (main.ts), for the ready line. */
const modulesLoadedMs = performance.now();

/** The store's V8 defaults this process set (those its command line did not give), for the ready line. */
const v8FlagDefaults: string[] = [];
const setDefault = (flag: string): void => void (defaultV8Flag(flag) && v8FlagDefaults.push(flag));

/**
 * V8's heap-growing factor for the store: the next full collection comes when the
 * JavaScript heap has grown to this many percent more than it held after the last. The
 * store's heap is small (~12 MB; its data is off the heap), and with V8's default factor
 * the limit stays closer than the young generation's size, so V8 starts a full collection
 * every few hundred milliseconds under load whatever is allocated. V8 also counts towards
 * that limit the ArrayBuffer memory allocated since the last full collection, which swings
 * by a GC ballast step (32 MiB) while the engine grows (see engine/gc-ballast.ts): at 300
 * (a limit of ~48 MB) a load of 8,000,000 keys still starts a full collection, a pause of
 * a few ms on the serving thread; at 500 (~72 MB) none comes
 * (docs/benchmarks.md#pauses-during-growth). The heap holds at most that much between
 * collections, and fills it only as slowly as the store promotes garbage (~3 MB per
 * 8,000,000 SETs). A flag given on the command line wins.
 */
const HEAP_GROWING_PERCENT = 500;
// Read by V8 each time it sets the heap's next limit, so setting it now takes effect.
setDefault(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);

/**
 * V8's memory reducer, off in the isolates made from here on. It starts full collections on a
 * timer (from 8 s after start) in an isolate that allocates little, to give memory back:
 * here, the page thread's (page-source.ts), which only hands out buffers. Its collections
 * came in the middle of 8,000,000-key loads (two a load, ~15 ms each on that thread, a core
 * the serving thread wants, and V8's threads marking for them). The serving isolate's heap
 * is ~12 MB and the engine gives its memory back without the collector (dropped tables are
 * reaped in steps, pages unmapped when freed), so the reducer has little to give back here.
 * The flag is read when an isolate is made: the serving isolate, made before this line runs,
 * keeps its reducer, which starts only while the store allocates little (idle). A flag given
 * on the command line (which turns it off in every isolate) wins.
 */
setDefault('--no-memory-reducer');

/**
 * V8's bytecode flushing, off. V8 throws away the bytecode (and the type feedback) of a
 * function that has not run for six full collections, and the engine's GC ballast (made
 * with the real engine, right after the warm-up) adds its whole size to V8's count of
 * external memory at once, which starts about ten full collections in a row: every
 * function the warm-up compiled, the first connection's path included, was parsed and
 * compiled again at the first client's commands, and what V8 had learnt about their types
 * lost. The store's bytecode is a few MB at most and stays in use; the serving isolate's
 * heap was the same size either way. A flag given on the command line wins.
 */
setDefault('--no-flush-bytecode');

// The serving thread first on a contended core (see background-thread-priority.ts).
const backgroundThreadsLowered = lowerV8WorkerPriority();

await runService({
  name: 'kvstore',
  loadConfig: loadStoreConfig,
  start: (config, logger) => startStoreService(config, { logger, backgroundThreadsLowered, v8FlagDefaults, nodeFlagsMissing: missingLaunchFlags(), modulesLoadedMs }),
  // Writing the shutdown snapshot takes as long as the data needs; the orchestrator's
  // grace period (compose stop_grace_period, Kubernetes terminationGracePeriodSeconds)
  // bounds it instead, and a second signal still stops at once.
  forceExitMs: (config) => (config.snapshotPath ? 2_147_483_647 : 5000),
});
