import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // engine-model.test.ts makes thousands of engines and collects the dead ones' reserved
    // address space itself, every few hundred (see newEngine there).
    execArgv: ['--expose-gc'],
  },
});
