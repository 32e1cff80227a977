// The HTTP benchmark's own machinery: each load generator reports what it measured
// (requests, non-2xx answers, latency, its CPU), and a short run of runHttpBench drives
// the shipped backend without errors. Figures are not judged here: that is `npm run bench`.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHttpBench } from '../bench/http-bench.ts';
import { autocannonLoadGenerator, defaultLoadGenerator, wrkLoadGenerator, type LoadGenerator } from '../bench/http-load-generators.ts';

const wrkAvailable = defaultLoadGenerator() === 'wrk';
const wrkRequired = process.env.CI === 'true' || process.env.REQUIRE_WRK === '1';
if (!wrkAvailable) {
  console.warn(
    `http-bench: wrk checks SKIPPED — no 'wrk' on PATH${wrkRequired ? ' (required here: failing)' : ' (Debian: apt-get install wrk; CI=true or REQUIRE_WRK=1 makes this a failure)'}`,
  );
}

const needWrk = (): void => {
  if (!wrkAvailable) throw new Error("no 'wrk' on PATH, and CI=true / REQUIRE_WRK=1 requires this check");
};

let server: Server;
let base: string;
const workDir = mkdtempSync(join(tmpdir(), 'kvstack-http-bench-test-'));

beforeAll(async () => {
  // 200 on /ok, 404 elsewhere: enough to see that non-2xx answers are counted, not hidden.
  server = createServer((req, res) => {
    res.statusCode = req.url === '/ok' ? 200 : 404;
    res.end('x');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(workDir, { recursive: true, force: true });
});

const generators: [string, () => LoadGenerator, boolean][] = [
  ['wrk', () => wrkLoadGenerator(workDir), wrkAvailable || wrkRequired],
  ['autocannon', () => autocannonLoadGenerator(), true],
];

describe.each(generators)('%s load generator', (name, make, enabled) => {
  it.skipIf(!enabled)('counts requests, latency and its own CPU; every answer 2xx', async () => {
    if (name === 'wrk') needWrk();
    const run = await make()(`${base}/ok`, 4, 1);
    expect(run.requests).toBeGreaterThan(100);
    expect(run.requestsPerSecond).toBeGreaterThan(0);
    expect(run.errors).toBe(0);
    expect(run.non2xx).toBe(0);
    // autocannon reports whole milliseconds, so its p50 on loopback may be 0.
    expect(run.latencyMs.p99).toBeGreaterThanOrEqual(run.latencyMs.p50);
    expect(run.latencyMs.max).toBeGreaterThanOrEqual(run.latencyMs.p99);
    expect(run.latencyMs.max).toBeGreaterThan(0);
    expect(run.cpuMicros).toBeGreaterThan(0);
  });

  it.skipIf(!enabled)('counts every 404 as non-2xx', async () => {
    if (name === 'wrk') needWrk();
    const run = await make()(`${base}/missing`, 2, 1);
    expect(run.requests).toBeGreaterThan(0);
    expect(run.non2xx).toBe(run.requests);
  });
});

describe('runHttpBench', () => {
  it('measures the shipped backend and the bare baselines in one short run, with no errors', async () => {
    const report = await runHttpBench({ modes: ['bare-express', 'backend'], durationSeconds: 1, warmupSeconds: 0, rounds: 1, connections: 8, log: () => {} });
    expect(report.loadGenerator).toBe(defaultLoadGenerator());
    expect(report.results.map((r) => r.mode)).toEqual(['bare-express', 'backend']);
    for (const r of report.results) {
      expect(r.requests, r.mode).toBeGreaterThan(100);
      expect(r.errors, r.mode).toBe(0);
      expect(r.non2xx, r.mode).toBe(0);
      expect(r.serverCpuMicrosPerRequest, r.mode).toBeGreaterThan(0);
    }
    expect(report.ratios['backend / bare-express (goal >= 0.7)']).toBeGreaterThan(0);
  }, 60_000);
});
