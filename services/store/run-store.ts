// The store's process (main.ts is its entry point): its V8 defaults, its threads'
// priorities, and the service, run until a signal stops it.
import { loadStoreConfig } from '../config/config.ts';
import { runService } from '../shared/run-service.ts';
import { lowerV8WorkerPriority } from './runtime/background-thread-priority.ts';
import { startStoreService } from './store-service.ts';
import { applyStoreV8Defaults } from './runtime/v8-flag-defaults.ts';
import { missingLaunchFlags } from './runtime/launch-flags.ts';

/** Ms from the process's start until its modules were loaded: Node's own start-up and the store's code (main.ts), for the ready line. */
const modulesLoadedMs = performance.now();

/** The store's V8 defaults this process set (those its command line did not give), for the ready line. */
const v8FlagDefaults = applyStoreV8Defaults();

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
