// The connection-churn bench (bench/connection-churn.ts) against real servers: every kind of
// short connection answered right and no descriptor left behind, on the store and on Redis.
// Memory figures are the bench's to report (docs/benchmarks.md#connection-churn), not
// asserted here.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { CLOSE_KINDS, churnConnections, exchange, type ConnectionChurnOptions } from '../bench/connection-churn.ts';
import { openFds } from '../bench/harness/proc.ts';
import { redisAvailable, startRedis, startStore, type Service } from '../bench/harness/services.ts';

const small: ConnectionChurnOptions = { connections: 400, rate: 2000, inFlight: 16, settleMs: 0, sampleMs: 50, kinds: CLOSE_KINDS };
const requireRedis = process.env.CI === 'true';
if (!redisAvailable()) console.warn(`connection-churn: Redis half SKIPPED — no redis-server on PATH${requireRedis ? ' (required under CI: failing)' : ''}`);

describe('the replies each connection must get', () => {
  it('are the store line protocol and Redis inline replies, an error first for garbage', () => {
    const store = exchange('store', 'garbage', 'churn:1', 'v7');
    expect(store.send).toBe('\x01NOT-A-COMMAND \x7f~~\nSET churn:1 v7\nGET churn:1\n');
    expect(store.expect.test('ERROR unknown command\nOK\nVALUE djc=\n')).toBe(true);
    expect(store.expect.test('OK\nVALUE djc=\n')).toBe(false); // the garbage line's error is missing
    const redis = exchange('redis', 'polite', 'churn:1', 'v7');
    expect(redis.send).toBe('SET churn:1 v7\r\nGET churn:1\r\n');
    expect(redis.expect.test('+OK\r\n$2\r\nv7\r\n')).toBe(true);
    expect(redis.expect.test('+OK\r\n$2\r\nv8\r\n')).toBe(false);
  });
});

describe('connection churn against real servers', () => {
  const services: Service[] = [];
  afterAll(() => services.forEach((s) => s.kill()));

  it('the store answers every kind of short connection and keeps no descriptor', { timeout: 60_000 }, async () => {
    const store = await startStore();
    services.push(store);
    const r = await churnConnections(store, 'store', small);
    expect(r.failed).toEqual({ polite: 0, reset: 0, 'half-closed': 0, garbage: 0 });
    expect(r.wrong).toBe(0);
    expect(r.answered).toBe(small.connections);
    expect(r.peakHeapUsedBytes).toBeGreaterThan(0);
    // Every descriptor goes back once the last sockets have closed (the bench's own scrapes
    // may hold one keep-alive connection to the admin port).
    await vi.waitUntil(() => openFds(store.pid) <= r.idleFds + 1, { timeout: 10_000, interval: 50 });
  });

  it.skipIf(!redisAvailable() && !requireRedis)('Redis answers the same churn', { timeout: 60_000 }, async () => {
    const redis = await startRedis();
    services.push(redis);
    const r = await churnConnections(redis, 'redis', small);
    expect(r.wrong).toBe(0);
    expect(r.answered).toBe(small.connections);
    expect(r.peakHeapUsedBytes).toBeNull();
    await vi.waitUntil(() => openFds(redis.pid) <= r.idleFds, { timeout: 10_000, interval: 50 });
  });
});
