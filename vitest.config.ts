import { defineConfig } from 'vitest/config';

/** The suites that exercise the store's client sockets: run a second time through Node's socket I/O (STORE_NATIVE_IO=off). */
const STORE_SOCKET_SUITES = ['test/store-protocol.test.ts', 'test/store-limits.test.ts', 'test/store-abuse.test.ts', 'test/store-fairness.test.ts', 'test/store-shared-reads.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // engine-model.test.ts makes thousands of engines and collects the dead ones' reserved
    // address space itself, every few hundred (see newEngine there).
    execArgv: ['--expose-gc'],
    projects: [
      // Every suite; a store started by the harness uses the native socket I/O where it is built.
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'node-io', include: STORE_SOCKET_SUITES, env: { TEST_STORE_NATIVE_IO: 'off' } } },
    ],
  },
});
