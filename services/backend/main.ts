// The backend's entry point: `node services/backend/main.ts` (dist/backend/main.js in the image).
//
// It imports none of the backend's modules statically, so that Node's compile cache is on
// before they load, as in the store's main.ts: a restart reads their compiled code from the
// cache instead of compiling them again. The cache lives in NODE_COMPILE_CACHE, else in the
// OS's temporary directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off (docs/configuration.md).
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./run-backend.ts');
