import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('bench/store-ab.ts, two builds of the store side by side', () => {
  it('runs a checkout against itself and prints each build\'s cost and the ratios', async () => {
    const { stdout } = await run(process.execPath, ['bench/store-ab.ts', '--against', '.', '--keys', '2000', '--slices', '6', '--slice-commands', '2000'], { timeout: 60_000 });
    expect(stdout).toMatch(/^depth 16, 2000 keys, 100-byte values, 9:1 GET:SET, 6 alternating slices of 2000 commands$/m);
    const costs = [...stdout.matchAll(/^(base|against): .* ([\d.]+) ns a command$/gm)].map((m) => Number(m[2]));
    expect(costs).toHaveLength(2);
    for (const ns of costs) expect(ns).toBeGreaterThan(0);
    const ratio = /^against\/base: ([\d.]+) of the totals; slices' median ([\d.]+) \(quartiles ([\d.]+)-([\d.]+)\)$/m.exec(stdout);
    expect(ratio).not.toBeNull();
    expect(Number(ratio![1])).toBeCloseTo(costs[1]! / costs[0]!, 2);
    expect(Number(ratio![3])).toBeLessThanOrEqual(Number(ratio![2]));
    expect(Number(ratio![2])).toBeLessThanOrEqual(Number(ratio![4]));
  });

  it('refuses to run without a second build, or with a count that is not one', async () => {
    await expect(run(process.execPath, ['bench/store-ab.ts'])).rejects.toMatchObject({ stderr: expect.stringContaining('--against <path of another checkout of kvstack> is required') });
    await expect(run(process.execPath, ['bench/store-ab.ts', '--against', '.', '--slices', '0'])).rejects.toMatchObject({ stderr: expect.stringContaining('--slices=0: expected a whole number of at least 1') });
  });
});
