import { loadBackendConfig } from '../config/config.ts';
import { runService } from '../shared/run-service.ts';
import { startBackendService } from './backend-service.ts';

await runService({
  name: 'kvbackend',
  loadConfig: loadBackendConfig,
  start: (config, logger) => startBackendService(config, { logger }),
  // The drain delay comes before the usual stop (at most 4 s of requests, then the shards' pools).
  forceExitMs: (config) => config.shutdownDelayMs + 5000,
});
