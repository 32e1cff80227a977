// The store's launch flags (services/store/runtime/launch-flags.ts): every launcher passes
// them (the image's CMD: observability-config.test.ts), and a store started without them says so.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { missingLaunchFlags, STORE_NODE_FLAGS } from '../services/store/runtime/launch-flags.ts';
import { fileURLToPath } from 'node:url';
import { parseLogLine, parseReadyLine, STORE_READY } from '../services/shared/ready-line.ts';
import { spawnUntilReady } from '../bench/harness/spawn-until-ready.ts';
import { startServiceProcess, storeScript } from './helpers/service-process.ts';
import { startStore } from '../bench/harness/services.ts';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe("the store's launch flags", () => {
  // The image's CMD, flags included, is held by observability-config's Dockerfile checks.
  it('are passed by npm run start:store and npm start', () => {
    const script = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts['start:store']!;
    const startLocal = read('services/start-local.ts');
    for (const flag of STORE_NODE_FLAGS) expect(script.split(' ')).toContain(flag);
    expect(startLocal).toContain('...STORE_NODE_FLAGS');
  });

  it('count as given in either spelling or with another value, and as missing otherwise', () => {
    expect(missingLaunchFlags([])).toEqual([...STORE_NODE_FLAGS]);
    expect(missingLaunchFlags([...STORE_NODE_FLAGS])).toEqual([]);
    expect(missingLaunchFlags(['--max_semi_space_size=16', '--memory-balancer'])).toEqual([]);
    // An operator's --no-memory-balancer is their choice, not a missing flag.
    expect(missingLaunchFlags(['--max-semi-space-size=4', '--no-memory_balancer'])).toEqual([]);
    expect(missingLaunchFlags(['--max-semi-space-size=4'])).toEqual(['--memory-balancer']);
    expect(missingLaunchFlags(['--max-old-space-size=4'])).toEqual([...STORE_NODE_FLAGS]);
  });

  it('reach a store the test and bench harnesses start; one started without them warns', { timeout: 60_000 }, async () => {
    const withFlags = await startServiceProcess(storeScript, { STORE_PORT: '0', STORE_METRICS_PORT: '0', STORE_WARMUP_KEYS: '0' }, STORE_READY);
    try {
      expect(withFlags.logs.find((l) => l.msg === STORE_READY)?.nodeFlagsMissing).toEqual([]);
    } finally {
      await withFlags.stop();
    }
    const bench = await startStore({ env: { STORE_WARMUP_KEYS: '0' } });
    try {
      expect(bench.ready?.nodeFlagsMissing).toEqual([]);
    } finally {
      bench.kill();
    }
    // What an operator running `node dist/store/main.js` by hand gets: a warning and the ready line's list.
    const lines: string[] = [];
    const bare = await spawnUntilReady({
      label: 'a store without its flags',
      command: process.execPath,
      args: [storeScript],
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, STORE_PORT: '0', STORE_METRICS_PORT: '0', STORE_WARMUP_KEYS: '0', LOG_LEVEL: 'info' },
      ready: (line) => parseReadyLine(line, STORE_READY),
      onLine: (line) => lines.push(line),
    });
    try {
      expect(bare.ready.nodeFlagsMissing).toEqual([...STORE_NODE_FLAGS]);
      const warning = lines.map(parseLogLine).find((l) => l?.level === 40 && String(l.msg).includes('without its Node flags'));
      expect(warning?.missing).toEqual([...STORE_NODE_FLAGS]);
    } finally {
      await bare.stop('SIGTERM', 5000);
    }
  });
});
