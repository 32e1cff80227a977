import { loadBackendConfig } from '../shared/config.ts';
import { runService } from '../shared/run-service.ts';
import { startBackendService } from './backend-service.ts';

await runService({ name: 'kvbackend', loadConfig: loadBackendConfig, start: (config, logger) => startBackendService(config, { logger }) });
