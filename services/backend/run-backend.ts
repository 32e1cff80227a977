// The backend's process (main.ts is its entry point): the service, run until a signal stops it.
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
