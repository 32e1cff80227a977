import { defineConfig } from 'vitest/config';

/** The suites that exercise the store's client sockets: run a second time through Node's socket I/O (STORE_NATIVE_IO=off). */
const STORE_SOCKET_SUITES = ['test/store-protocol.test.ts', 'test/store-limits.test.ts', 'test/store-abuse.test.ts', 'test/store-fairness.test.ts', 'test/store-shared-reads.test.ts'];

/**
 * The store suites whose clients all connect through the harness: run a third time with TLS
 * on the store's port (TEST_STORE_TLS=1: store-harness.ts). The flow-control suites open raw
 * TCP sockets; store-tls.test.ts covers backpressure over TLS.
 */
const STORE_TLS_SUITES = ['test/store-protocol.test.ts', 'test/store-auth.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // engine-model.test.ts makes thousands of engines and collects the dead ones' reserved
    // address space itself, every few hundred (see newEngine there).
    execArgv: ['--expose-gc'],
    // Every log line the services write in a test file is looked at for the secrets they were given (SPEC §8).
    setupFiles: ['test/setup/log-secrets.ts'],
    projects: [
      // Every suite; a store started by the harness uses the native socket I/O where it is built.
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'node-io', include: STORE_SOCKET_SUITES, env: { TEST_STORE_NATIVE_IO: 'off' } } },
      { extends: true, test: { name: 'tls', include: STORE_TLS_SUITES, env: { TEST_STORE_TLS: '1' } } },
    ],
  },
});
