// Node's built-in modules whose ES-module form costs every process that imports it. An
// `import ... from 'node:http'` (or 'node:fs', 'node:https') builds a module facade that reads
// each of the module's exports, and their lazy ones (http's WebSocket and fetch classes,
// fs.promises) load undici, http2, TLS, zlib, web streams and readline along with them:
// ~25 ms of start-up and ~14 MiB of resident memory in a store that uses none of them
// (docs/benchmarks.md#start-up). process.getBuiltinModule gives the CommonJS object, whose
// lazy exports stay unloaded until used. node:https and node:tls (OpenSSL's contexts, the
// TLS socket wrap) load at their first use, so only a service with TLS set up pays for
// them. So do node:crypto, node:zlib, node:fs/promises and node:worker_threads (29 of the
// store's built-in modules, ~1.7 MiB of its idle RSS; 6.5 MiB in a bare Node): the store
// and what it loads use them only with a password, TLS, a snapshot or no add-on. The
// services import these from here; test/builtins.test.ts holds them to it. Type-only
// imports from the modules are free.
export const fs = process.getBuiltinModule('node:fs');
export const http = process.getBuiltinModule('node:http');

/** node:https, loaded at the first call (Node keeps it loaded from then on). */
export const httpsModule = (): typeof import('node:https') => process.getBuiltinModule('node:https');
/** node:tls, loaded at the first call (Node keeps it loaded from then on). */
export const tlsModule = (): typeof import('node:tls') => process.getBuiltinModule('node:tls');
/** node:crypto, loaded at the first call. */
export const cryptoModule = (): typeof import('node:crypto') => process.getBuiltinModule('node:crypto');
/** node:zlib, loaded at the first call. */
export const zlibModule = (): typeof import('node:zlib') => process.getBuiltinModule('node:zlib');
/** node:fs/promises, loaded at the first call. */
export const fsPromises = (): typeof import('node:fs/promises') => process.getBuiltinModule('node:fs/promises');
/** node:worker_threads, loaded at the first call. */
export const workerThreadsModule = (): typeof import('node:worker_threads') => process.getBuiltinModule('node:worker_threads');
