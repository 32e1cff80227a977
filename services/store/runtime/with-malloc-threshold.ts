// Imported by main.ts before the rest of the store's modules load, so that malloc's mmap
// threshold is fixed first and, where that takes a second boot, the process replaces itself
// before loading them; then malloc's arenas are limited (before the store's own threads
// start): see malloc-tuning.ts. Kept apart so that importing malloc-tuning.ts (tests do)
// changes nothing in a process.
import { ensureMallocMmapThreshold, limitMallocArenas } from './malloc-tuning.ts';

ensureMallocMmapThreshold();
limitMallocArenas();
