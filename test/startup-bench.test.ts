import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../bench/startup-bench.ts', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });

describe('bench/startup-bench.ts', () => {
  it('prints its usage with --help and starts nothing', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: node bench\/startup-bench\.ts .*--keys .*--against <checkout>.*--built/);
  });

  it('refuses a key count that is not a whole number of at least 1, naming the option, before it starts anything', () => {
    for (const keys of ['0', '1000,x', '2.5']) {
      const r = run('--keys', keys, '--no-redis');
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^--keys=\S+: expected a whole number of at least 1/);
      expect(r.stdout).toBe('');
    }
  });
});
