import { describe, expect, it } from 'vitest';
import { benchKey, createLineEncoder } from '../services/cli/bench/command-encoder.ts';
import { LatencyHistogram } from '../services/cli/bench/latency-histogram.ts';
import { EXPECT_GET, EXPECT_SET, LineReplyScanner } from '../services/cli/bench/reply-scanner.ts';
import { scanBothWays } from './helpers/scan-both-ways.ts';

describe('LatencyHistogram', () => {
  it('is exact to the microsecond below 256 µs', () => {
    const h = new LatencyHistogram();
    for (let us = 0; us < 256; us++) h.recordMs(us / 1000);
    expect(h.count).toBe(256);
    expect(h.quantileUs(1 / 256)).toBe(0);
    expect(h.quantileUs(0.5)).toBe(127);
    expect(h.quantileUs(1)).toBe(255);
    expect(h.summary().max).toBe(0.255);
  });

  it('keeps every value within 1/128 above it, up to minutes', () => {
    for (const us of [256, 257, 1000, 4095, 4096, 123_456, 9_999_999, 3_600_000_000]) {
      const reported = new LatencyHistogram();
      reported.recordMs(us / 1000);
      reported.maxUs = Number.MAX_SAFE_INTEGER; // look at the bucket edge, not the exact max
      const edge = reported.quantileUs(1);
      expect(edge).toBeGreaterThanOrEqual(us);
      expect((edge - us) / us).toBeLessThan(1 / 128);
    }
  });

  it('computes percentiles of a known distribution and merges', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    // 1..1000 µs once each, split over two histograms by parity, recorded in groups.
    for (let us = 1; us <= 1000; us++) (us % 2 ? a : b).recordMs(us / 1000);
    a.merge(b);
    expect(a.count).toBe(1000);
    const p50 = a.quantileUs(0.5);
    const p99 = a.quantileUs(0.99);
    expect(p50).toBeGreaterThanOrEqual(500);
    expect(p50).toBeLessThanOrEqual(504);
    expect(p99).toBeGreaterThanOrEqual(990);
    expect(p99).toBeLessThanOrEqual(998);
    expect(a.summary().max).toBe(1);
    expect(a.summary().mean).toBeCloseTo(0.5005, 2);
  });

  it('records many requests at once and survives a round trip through toData', () => {
    const h = new LatencyHistogram();
    h.recordMs(0.1, 99);
    h.recordMs(10, 1);
    const copy = LatencyHistogram.fromData(h.toData());
    expect(copy.count).toBe(100);
    expect(copy.quantileUs(0.99)).toBe(100);
    expect(copy.quantileUs(0.999)).toBe(10_000);
  });
});

describe('command encoder', () => {
  it('writes kvstack line commands with 12-digit keys', () => {
    const enc = createLineEncoder(5);
    const buf = Buffer.alloc(enc.getLength + enc.setLength);
    const off = enc.writeGet(buf, 0, 42);
    enc.writeSet(buf, off, 123_456_789_012);
    expect(buf.toString()).toBe('GET key:000000000042\nSET key:123456789012 xxxxx\n');
    expect(benchKey(42)).toBe('key:000000000042');
  });
});

describe('reply scanners', () => {
  const G = EXPECT_GET;
  const S = EXPECT_SET;
  const b64 = Buffer.from('xxxxx').toString('base64');

  it('line: sorts replies into ok, miss, error and wrong', () => {
    const stream = `OK\nVALUE ${b64}\nNOT_FOUND\nERROR out of memory\nVALUE eHh4\nOK\nPONG\n`;
    expect(scanBothWays(() => new LineReplyScanner(5), [S, G, G, S, G, G, S], stream)).toEqual({ done: 7, misses: 1, errors: 1, wrong: 3, broken: false });
  });

  it('line: counts only complete lines and accepts CRLF and an empty value', () => {
    expect(scanBothWays(() => new LineReplyScanner(0), [G, G, S], 'VALUE \r\nVALUE\nOK\r\nVAL')).toEqual({ done: 3, misses: 0, errors: 0, wrong: 0, broken: false });
  });
});
