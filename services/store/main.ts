import { loadStoreConfig } from '../shared/config.ts';
import { runService } from '../shared/run-service.ts';
import { startStoreService } from './store-service.ts';

await runService({
  name: 'kvstore',
  loadConfig: loadStoreConfig,
  start: (config, logger) => startStoreService(config, { logger }),
  // Writing the shutdown snapshot takes as long as the data needs; the orchestrator's
  // grace period (compose stop_grace_period, Kubernetes terminationGracePeriodSeconds)
  // bounds it instead, and a second signal still stops at once.
  forceExitMs: (config) => (config.snapshotPath ? 2_147_483_647 : 5000),
});
