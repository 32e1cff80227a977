import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../bench/throughput-ab.ts', import.meta.url));
const checkout = fileURLToPath(new URL('..', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });

// Its measuring needs kvload (a C load generator outside the project); what is checked
// here is that it refuses what it cannot run, before it starts anything.
describe('bench/throughput-ab.ts', () => {
  it('prints its usage with --help and starts nothing', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: node bench\/throughput-ab\.ts --against <checkout> --kvload <kvload> \[--depth 1\]/);
  });

  it('refuses to run without the other build or kvload, or with a depth that is not a whole number of at least 1', () => {
    const cases: [string[], RegExp][] = [
      [['--kvload', process.execPath], /^--against <checkout> is required/],
      [['--against', checkout], /^--kvload <kvload> is required/],
      [['--against', '/nonexistent', '--kvload', process.execPath], /^--against=\/nonexistent: not a kvstack checkout/],
      [['--against', checkout, '--kvload', '/nonexistent/kvload'], /^--kvload=\/nonexistent\/kvload: no such file/],
      [['--against', checkout, '--kvload', process.execPath, '--depth', '0'], /^--depth=0: expected a whole number of at least 1/],
    ];
    for (const [args, message] of cases) {
      const r = run(...args);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });
});
