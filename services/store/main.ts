import { loadStoreConfig } from '../shared/config.ts';
import { runService } from '../shared/run-service.ts';
import { startStoreService } from './store-service.ts';

await runService({ name: 'kvstore', loadConfig: loadStoreConfig, start: (config, logger) => startStoreService(config, { logger }) });
