// Imported first by main.ts, so the process replaces itself (when it must) before the rest
// of the store's modules run: see malloc-tuning.ts. Kept apart so that importing
// malloc-tuning.ts (tests do) never replaces a process.
import { ensureMallocMmapThreshold } from './malloc-tuning.ts';

ensureMallocMmapThreshold();
