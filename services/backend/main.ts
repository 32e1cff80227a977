// The backend's entry point: `node services/backend/main.ts` (dist/backend/main.js in the image).
//
// It imports none of the backend's modules statically, so that Node's compile cache is on
// before they load, as in the store's main.ts (shared/compile-cache.ts).
import { startWithCompileCache } from '../shared/compile-cache.ts';

await startWithCompileCache(() => import('./run-backend.ts'));
