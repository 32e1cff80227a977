// The short soak that `npm test` runs: the same code as `npm run soak` (bench/soak.ts),
// a few seconds of mixed load through the backend and straight to the store, with every
// read checked against what was written. Plus the verifier's own rules, so a mismatch is
// known to be caught.
import { describe, expect, it } from 'vitest';
import { runSoak } from '../bench/soak.ts';
import { formatSoakReport } from '../bench/soak-report.ts';
import { Verifier } from '../bench/soak-verifier.ts';

describe('the soak verifier', () => {
  it('accepts the last acknowledged value, and after a lost answer either outcome, then settles on what it saw', () => {
    const v = new Verifier();
    expect(v.read('k', null, 'test')).toBe(true); // never written: absent
    v.acknowledged('k', Buffer.from('one'));
    expect(v.read('k', Buffer.from('one'), 'test')).toBe(true);
    v.uncertain('k', Buffer.from('two')); // a write whose answer was lost
    expect(v.read('k', Buffer.from('two'), 'test')).toBe(true);
    expect(v.read('k', Buffer.from('one'), 'test')).toBe(false); // settled on "two": "one" is now stale
    v.uncertain('k', null); // a delete whose answer was lost
    expect(v.read('k', Buffer.from('two'), 'test')).toBe(true);
    expect(v.mismatches).toHaveLength(1);
  });

  it('reports a value nobody wrote, a lost acknowledged write, and a resurrected delete', () => {
    const v = new Verifier();
    v.acknowledged('a', Buffer.from('x'));
    expect(v.read('a', Buffer.from('y'), 'test')).toBe(false);
    expect(v.read('a', null, 'test')).toBe(false);
    v.acknowledged('a', null);
    expect(v.read('a', Buffer.from('x'), 'test')).toBe(false);
    expect(v.mismatches.map((m) => m.got)).toEqual(['1 bytes 79', 'absent', '1 bytes 78']);
  });
});

describe('the short soak', () => {
  it('runs a few seconds of mixed load through both paths with zero data mismatches', { timeout: 60_000 }, async () => {
    const report = await runSoak({ durationSec: 3, httpWorkers: 4, tcpWorkers: 2, tcpDepth: 4, keysPerWorker: 40, sampleEverySec: 1, log: () => {} });
    console.log(formatSoakReport(report));
    expect(report.mismatches).toEqual([]);
    expect(report.servicesAlive).toBe(true);
    expect(report.http.verified).toBeGreaterThan(0);
    expect(report.tcp.verified).toBeGreaterThan(0);
    expect(report.http.writes).toBeGreaterThan(0);
    expect(report.tcp.writes).toBeGreaterThan(0);
    expect(report.finalKeysChecked).toBeGreaterThan(0);
    expect(report.evictions).toBe(0);
    expect(report.memory.length).toBeGreaterThanOrEqual(2);
    for (const m of report.memory) expect(m.storeRssBytes > 0 && m.backendRssBytes > 0).toBe(true);
  });
});
