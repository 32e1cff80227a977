// bench/growth-stall.ts refuses a bad nice value for its prober or its server, and a
// real-time prober it cannot have, before it starts anything, naming the flag.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const run = (...args: string[]) => spawnSync(process.execPath, ['bench/growth-stall.ts', ...args], { encoding: 'utf8', timeout: 30_000 });
const runWithoutPath = (...args: string[]) => spawnSync(process.execPath, ['bench/growth-stall.ts', ...args], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, PATH: '/nonexistent' } });

describe('growth-stall options', () => {
  it.each(['prober-nice', 'server-nice'])('--%s outside -20..19 or not an integer is refused, naming the flag', (flag) => {
    for (const bad of ['20', '-21', '1.5', 'high']) {
      const r = run(`--${flag}=${bad}`);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(`--${flag} must be an integer from -20 to 19, got ${bad}`);
    }
  });

  it('--prober-fifo without chrt is refused, naming the flag', () => {
    const r = runWithoutPath('--prober-fifo');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('--prober-fifo: chrt is not on PATH');
  });
});
