// The store's entry point: `node services/store/main.ts` (dist/store/main.js in the image).
import './run-store.ts';
