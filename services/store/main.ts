// First: the process may replace itself with a fixed malloc threshold (malloc-tuning.ts).
import './with-malloc-threshold.ts';
import { setFlagsFromString } from 'node:v8';
import { loadStoreConfig } from '../shared/config.ts';
import { runService } from '../shared/run-service.ts';
import { lowerV8WorkerPriority } from './background-thread-priority.ts';
import { startStoreService } from './store-service.ts';

/**
 * V8's heap-growing factor for the store: the next full collection comes when the
 * JavaScript heap has grown to this many percent more than it held after the last. The
 * store's heap is small (~11 MB; its data is off the heap), and with V8's default factor
 * the limit stays closer than the young generation's size, so V8 starts a full collection
 * every few hundred milliseconds under load whatever is allocated: ~20 during an
 * 8,000,000-key load. With 300 (a limit of ~45 MB) a load runs without one; the engine's
 * GC ballast keeps its own growth from starting them (see gc-ballast.ts). A flag given
 * on the command line wins.
 */
const HEAP_GROWING_PERCENT = 300;
if (!process.execArgv.some((arg) => /^--heap[-_]growing[-_]percent/.test(arg))) {
  // Read by V8 each time it sets the heap's next limit, so setting it now takes effect.
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

// The serving thread first on a contended core (see background-thread-priority.ts).
const backgroundThreadsLowered = lowerV8WorkerPriority();

await runService({
  name: 'kvstore',
  loadConfig: loadStoreConfig,
  start: (config, logger) => startStoreService(config, { logger, backgroundThreadsLowered }),
  // Writing the shutdown snapshot takes as long as the data needs; the orchestrator's
  // grace period (compose stop_grace_period, Kubernetes terminationGracePeriodSeconds)
  // bounds it instead, and a second signal still stops at once.
  forceExitMs: (config) => (config.snapshotPath ? 2_147_483_647 : 5000),
});
