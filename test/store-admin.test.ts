import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { destroyAll, track } from './helpers/cleanup.ts';
import { parseExposition, sampleValue, type Exposition } from '../bench/harness/exposition.ts';
import { LineClient } from './helpers/line-client.ts';
import { freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { BACKGROUND_NICE } from '../services/store/runtime/background-thread-priority.ts';
import { MALLOC_ARENAS, mallocMmapThreshold, MMAP_THRESHOLD_BYTES } from '../services/store/runtime/malloc-tuning.ts';
import { PAGE_THREAD_NAME } from '../services/store/engine/page-source.ts';
import { b64 } from './helpers/base64.ts';
import { loadSocketIo } from '../services/store/network/native-io.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';
import { compileCacheEntries } from './helpers/compile-cache.ts';

afterEach(destroyAll);

/** The threads of process `pid` (Linux): id, name (comm) and nice value. */
function threadsOf(pid: number): { tid: number; name: string; nice: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    // comm may hold spaces, so the fields are counted from the ')' that closes it: nice is field 19.
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { tid: Number(tid), name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(), nice: Number(fields[19 - 3]) };
  });
}

async function scrape(store: TestStore): Promise<Exposition> {
  const res = await store.admin('/metrics');
  expect(res.status).toBe(200);
  return parseExposition(res.body);
}

// SPEC §4, store half: name → type.
const STORE_METRICS: Record<string, string> = {
  kvstore_commands_total: 'counter',
  kvstore_command_duration_seconds: 'histogram',
  kvstore_usage_bytes: 'gauge',
  kvstore_max_memory_bytes: 'gauge',
  kvstore_keys: 'gauge',
  kvstore_evictions_total: 'counter',
  kvstore_expired_keys_total: 'counter',
  kvstore_expiry_backlog_keys: 'gauge',
  kvstore_keyspace_hits_total: 'counter',
  kvstore_keyspace_misses_total: 'counter',
  kvstore_connections: 'gauge',
  kvstore_connections_total: 'counter',
  kvstore_rejected_connections_total: 'counter',
  kvstore_protocol_errors_total: 'counter',
  kvstore_network_received_bytes_total: 'counter',
  kvstore_network_sent_bytes_total: 'counter',
  kvstore_connection_yields_total: 'counter',
  kvstore_output_limit_disconnects_total: 'counter',
};

const COMMANDS = ['SET', 'GET', 'DELETE', 'USAGE', 'QUIT', 'PING', 'SETEX', 'EXPIRE', 'TTL', 'STATS', 'AUTH', 'UNKNOWN'];
const RESULTS = ['ok', 'not_found', 'error'];
const REASONS = ['empty_command', 'unknown_command', 'wrong_number_of_arguments', 'invalid_key', 'invalid_expire_time', 'value_too_large', 'line_too_long', 'authentication_required'];
const YIELD_REASONS = ['reply_bound', 'command_budget', 'time_slice', 'turn_budget'];

describe('admin endpoints', () => {
  it('/livez, /readyz and /healthz answer while the store listens', async () => {
    const store = await startTestStore();
    expect(await store.admin('/livez')).toEqual({ status: 200, body: 'ok\n' });
    expect((await store.admin('/readyz')).status).toBe(200);
    const c = await store.client();
    await c.request('SET k 12345');
    const health = await store.admin('/healthz');
    expect(health.status).toBe(200);
    const body = JSON.parse(health.body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['latencyMs', 'status', 'usage']);
    expect(body).toMatchObject({ status: 'ok', usage: 6 });
    expect(typeof body.latencyMs).toBe('number');
  });

  it('/readyz and /healthz answer 503 once the TCP listener is closed; /livez stays 200', async () => {
    const store = await startTestStore();
    await new Promise<void>((resolve) => store.service.server.server.close(() => resolve()));
    expect((await store.admin('/readyz')).status).toBe(503);
    const health = await store.admin('/healthz');
    expect(health.status).toBe(503);
    const body = JSON.parse(health.body) as Record<string, unknown>;
    expect(body.status).toBe('error');
    expect(typeof body.error).toBe('string');
    expect((await store.admin('/livez')).status).toBe(200);
  });

  it('logs exactly one ready line with host and ports', async () => {
    const store = await startTestStore();
    const ready = store.logs.filter((l) => l.msg === STORE_READY);
    expect(ready).toHaveLength(1);
    expect(ready[0]).toMatchObject({ level: 30, host: '127.0.0.1', port: store.port, metricsPort: store.metricsPort });
  });
});

describe('/metrics', () => {
  it('serves every SPEC §4 store metric with its type, plus process metrics, in valid exposition text', async () => {
    const store = await startTestStore();
    const e = await scrape(store);
    for (const [name, type] of Object.entries(STORE_METRICS)) expect(e.types.get(name), name).toBe(type);
    expect(e.types.get('process_cpu_seconds_total')).toBe('counter');
    expect(e.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    // Every series alerts and dashboards use exists from the start.
    for (const command of COMMANDS) {
      for (const result of RESULTS) expect(sampleValue(e, 'kvstore_commands_total', { command, result })).toBe(0);
      expect(sampleValue(e, 'kvstore_command_duration_seconds_count', { command })).toBe(0);
    }
    for (const reason of REASONS) expect(sampleValue(e, 'kvstore_protocol_errors_total', { reason })).toBe(0);
    for (const reason of YIELD_REASONS) expect(sampleValue(e, 'kvstore_connection_yields_total', { reason })).toBe(0);
    expect(sampleValue(e, 'kvstore_output_limit_disconnects_total', {})).toBe(0);
  });

  it('the histogram has sub-millisecond buckets, cumulative counts, and _sum/_count per command', async () => {
    const store = await startTestStore();
    const c = await store.client();
    for (let i = 0; i < 50; i++) await c.request(`SET k${i} v`);
    const e = await scrape(store);
    const buckets = e.samples.filter((s) => s.name === 'kvstore_command_duration_seconds_bucket' && s.labels.command === 'SET');
    const les = buckets.map((s) => (s.labels.le === '+Inf' ? Infinity : Number(s.labels.le)));
    expect(les[0]).toBeLessThanOrEqual(0.00005);
    expect(les.filter((le) => le < 0.001).length).toBeGreaterThanOrEqual(4);
    expect(les.at(-1)).toBe(Infinity);
    for (let i = 1; i < buckets.length; i++) {
      expect(les[i]).toBeGreaterThan(les[i - 1]!);
      expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
    }
    expect(buckets.at(-1)!.value).toBe(50);
    expect(sampleValue(e, 'kvstore_command_duration_seconds_count', { command: 'SET' })).toBe(50);
    const sum = sampleValue(e, 'kvstore_command_duration_seconds_sum', { command: 'SET' })!;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(50); // seconds, not ms
    expect(Object.keys(buckets[0]!.labels).sort()).toEqual(['command', 'le']);
  });

  it('counters match the commands sent', async () => {
    const store = await startTestStore({ maxMemoryBytes: 40, evictionPolicy: 'lru' });
    const c = await store.client();
    c.send(
      [
        'SET a 1', 'SET b 2', 'SET c 3', // 4 bytes each
        'GET a', 'GET a', 'GET zz', // 2 hits, 1 miss
        'SETEX t 5 x', 'TTL t', 'TTL zz', 'EXPIRE a 9', 'EXPIRE zz 9',
        'DELETE b', 'DELETE zz', 'USAGE', 'PING', 'STATS',
        'FLY', '', 'GET', 'GET  k', 'SETEX k 0 v', `SET big ${'x'.repeat(39)}`,
        `SET e1 ${'e'.repeat(30)}`, `SET e2 ${'e'.repeat(30)}`, // 32 bytes each: each evicts
      ].join('\n') + '\n',
    );
    await c.lines(24);
    const d = await store.client();
    d.send('QUIT\n');
    await d.closed;
    const e = await scrape(store);
    const count = (command: string, result: string) => sampleValue(e, 'kvstore_commands_total', { command, result });
    expect(count('SET', 'ok')).toBe(5);
    expect(count('SET', 'error')).toBe(1); // out of memory (entry larger than the cap)
    expect(count('GET', 'ok')).toBe(2);
    expect(count('GET', 'not_found')).toBe(1);
    expect(count('GET', 'error')).toBe(2);
    expect(count('SETEX', 'ok')).toBe(1);
    expect(count('SETEX', 'error')).toBe(1);
    expect(count('TTL', 'ok')).toBe(1);
    expect(count('TTL', 'not_found')).toBe(1);
    expect(count('EXPIRE', 'ok')).toBe(1);
    expect(count('EXPIRE', 'not_found')).toBe(1);
    expect(count('DELETE', 'ok')).toBe(2);
    expect(count('USAGE', 'ok')).toBe(1);
    expect(count('PING', 'ok')).toBe(1);
    expect(count('STATS', 'ok')).toBe(1);
    expect(count('QUIT', 'ok')).toBe(1);
    expect(count('UNKNOWN', 'error')).toBe(2); // FLY and the empty line
    expect(sampleValue(e, 'kvstore_command_duration_seconds_count', { command: 'GET' })).toBe(5);
    const reason = (r: string) => sampleValue(e, 'kvstore_protocol_errors_total', { reason: r });
    expect(reason('unknown_command')).toBe(1);
    expect(reason('empty_command')).toBe(1);
    expect(reason('wrong_number_of_arguments')).toBe(1);
    expect(reason('invalid_key')).toBe(1);
    expect(reason('invalid_expire_time')).toBe(1);
    expect(reason('value_too_large')).toBe(0);
    expect(sampleValue(e, 'kvstore_keyspace_hits_total')).toBe(2);
    expect(sampleValue(e, 'kvstore_keyspace_misses_total')).toBe(1);
    expect(sampleValue(e, 'kvstore_evictions_total')).toBeGreaterThanOrEqual(2);
    expect(sampleValue(e, 'kvstore_max_memory_bytes')).toBe(40);
    expect(sampleValue(e, 'kvstore_usage_bytes')).toBe(store.service.engine.usageBytes);
    expect(sampleValue(e, 'kvstore_keys')).toBe(store.service.engine.keyCount);
    expect(sampleValue(e, 'kvstore_connections')).toBe(1);
    expect(sampleValue(e, 'kvstore_max_connections')).toBe(10000);
    expect(sampleValue(e, 'kvstore_connections_total')).toBe(2);
    expect(sampleValue(e, 'kvstore_rejected_connections_total')).toBe(0);
    expect(sampleValue(e, 'kvstore_network_received_bytes_total')).toBe(store.service.metrics.receivedBytes);
    expect(sampleValue(e, 'kvstore_network_received_bytes_total')).toBeGreaterThan(200);
    expect(sampleValue(e, 'kvstore_network_sent_bytes_total')).toBe(c.received.join('\n').length + 1 + 'BYE\n'.length);
  });

  it('line too long, value too large, rejected connections and expired keys are counted', async () => {
    const store = await startTestStore({ maxValueBytes: 8, maxConnections: 1 }, { sweepIntervalMs: 10 });
    const a = await store.client();
    expect(await a.request('SETEX t 1 v')).toBe('OK');
    expect(await a.request(`SET k ${'x'.repeat(9)}`)).toBe('ERROR value too large');
    const b = await store.client();
    await b.closed;
    expect(b.received).toEqual(['ERROR max connections reached']);
    store.clock.advance(1500);
    await vi.waitFor(() => expect(store.service.engine.expired).toBe(1), { interval: 5 });
    expect(await a.request(`SET k ${'x'.repeat(600)}`)).toBe('ERROR line too long');
    const e = await scrape(store);
    expect(sampleValue(e, 'kvstore_protocol_errors_total', { reason: 'line_too_long' })).toBe(1);
    expect(sampleValue(e, 'kvstore_protocol_errors_total', { reason: 'value_too_large' })).toBe(1);
    expect(sampleValue(e, 'kvstore_rejected_connections_total')).toBe(1);
    expect(sampleValue(e, 'kvstore_expired_keys_total')).toBe(1);
  });

  it('label values come only from the fixed sets: 1,000 distinct keys add no series', async () => {
    const store = await startTestStore();
    const c = await store.client();
    await c.request('PING');
    const before = await scrape(store);
    const lines: string[] = [];
    for (let i = 0; i < 1000; i++) lines.push(`SET key-${i} v`, `GET key-${i}`, `GET nokey-${i}`, `BOGUS-${i} x`, `TTL key-${i} extra`);
    c.send(lines.join('\n') + '\n');
    await c.lines(lines.length);
    const after = await scrape(store);
    const kv = (e: Exposition) => e.samples.filter((s) => s.name.startsWith('kvstore_'));
    expect(kv(after).length).toBe(kv(before).length);
    for (const s of kv(after)) {
      if ('command' in s.labels) expect(COMMANDS).toContain(s.labels.command);
      if ('result' in s.labels) expect(RESULTS).toContain(s.labels.result);
      if ('reason' in s.labels) expect(s.name === 'kvstore_connection_yields_total' ? YIELD_REASONS : REASONS).toContain(s.labels.reason);
      expect(JSON.stringify(s.labels)).not.toMatch(/key-|BOGUS/);
    }
    expect(sampleValue(after, 'kvstore_commands_total', { command: 'UNKNOWN', result: 'error' })).toBe(1000);
  });

  it('each service instance has its own registry', async () => {
    const one = await startTestStore();
    const two = await startTestStore();
    const c = await one.client();
    await c.request('PING');
    expect(sampleValue(await scrape(one), 'kvstore_commands_total', { command: 'PING', result: 'ok' })).toBe(1);
    expect(sampleValue(await scrape(two), 'kvstore_commands_total', { command: 'PING', result: 'ok' })).toBe(0);
  });
});

describe('shutdown', () => {
  it('close() answers what was received, ends sockets, stops accepting, closes the admin port, and resolves', async () => {
    const store = await startTestStore();
    const c = await store.client();
    const idle = await store.client();
    c.send('SET k v\nGET k\nPING\n');
    expect(await c.lines(3)).toEqual(['OK', `VALUE ${b64('v')}`, 'PONG']);
    await store.service.close();
    await c.closed;
    await idle.closed;
    expect(c.error).toBeUndefined();
    await expect(LineClient.connect(store.port)).rejects.toThrow(/ECONNREFUSED/);
    await expect(fetch(`http://127.0.0.1:${store.metricsPort}/livez`)).rejects.toThrow();
    expect(store.logs.map((l) => l.msg)).toContain('kvstore stopped');
    await store.service.close(); // the same promise again
  });

  it('close() first answers the lines a backpressured connection is holding, then ends it', async () => {
    const store = await startTestStore();
    const setup = await store.client();
    const value = 'z'.repeat(10_000);
    await setup.request(`SET big ${value}`);
    const c = await store.client();
    c.socket.pause();
    c.send('GET big\n'.repeat(2000));
    const stuck = () => store.service.server.connectionFlows().some((f) => f.paused && f.writableLength > 0);
    await vi.waitFor(() => expect(stuck()).toBe(true), { timeout: 10_000, interval: 5 });
    const answeredBefore = store.service.metrics.commands[1 * 3]!; // GET ok
    const closed = store.service.close();
    c.socket.resume();
    await closed;
    await c.closed;
    expect(c.error).toBeUndefined();
    const expected = `VALUE ${b64(value)}`;
    expect(c.received.length).toBeGreaterThan(answeredBefore);
    expect(c.received.every((l) => l === expected)).toBe(true);
  });

  it('close() cuts clients that do not take their replies after the grace period', async () => {
    const store = await startTestStore({}, { shutdownGraceMs: 100 });
    const setup = await store.client();
    await setup.request(`SET big ${'q'.repeat(10_000)}`);
    const c = await store.client();
    c.socket.pause();
    c.send('GET big\n'.repeat(2000));
    await vi.waitFor(() => expect(store.service.server.connectionFlows().some((f) => f.paused && f.writableLength > 0)).toBe(true), { timeout: 10_000, interval: 5 });
    await store.service.close();
    expect(store.service.server.connectionCount).toBe(0);
  });

  it('destroy() is immediate and idempotent', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('PING')).toBe('PONG');
    store.service.destroy();
    store.service.destroy();
    await c.closed;
    await expect(LineClient.connect(store.port)).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('main.ts', () => {
  it('logs the ready line, serves, and exits 0 on SIGTERM', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const proc = await startServiceProcess(storeScript, { STORE_PORT: String(port), STORE_METRICS_PORT: String(metricsPort) }, STORE_READY);
    track({ destroy: () => proc.child.kill('SIGKILL') });
    expect(proc.logs.filter((l) => l.msg === STORE_READY)).toEqual([expect.objectContaining({ port, metricsPort, host: '127.0.0.1' })]);
    // V8's background threads run at nice 19, the serving thread at the process's own.
    const lowered = proc.logs.find((l) => l.msg === STORE_READY)!.backgroundThreadsLowered as number;
    if (process.platform === 'linux') {
      const threads = threadsOf(proc.pid);
      const workers = threads.filter((t) => t.name === 'V8Worker');
      expect(workers.length).toBeGreaterThan(0);
      expect(lowered).toBe(workers.length);
      expect(workers.every((t) => t.nice === BACKGROUND_NICE)).toBe(true);
      expect(threads.find((t) => t.tid === proc.pid)!.nice).toBe(getPriority()); // inherited from this process, unchanged
    }
    // The store's own V8 defaults, none given on its command line here (main.ts).
    expect(proc.logs.find((l) => l.msg === STORE_READY)!.v8FlagDefaults).toEqual([
      '--heap-growing-percent=200',
      '--external-memory-accounted-in-global-limit',
      '--no-memory-reducer',
      '--semi-space-growth-factor=1',
      '--no-flush-bytecode',
    ]);
    // Where start-up went, from the process's start: its parts add up to the whole, and the
    // admin port says the whole as kvstore_start_duration_seconds.
    const startup = proc.logs.find((l) => l.msg === STORE_READY)!.startup as Record<string, number>;
    expect(Object.keys(startup).sort()).toEqual(['modulesMs', 'otherMs', 'snapshotLoadMs', 'totalMs', 'warmupMs']);
    expect(Object.values(startup).every((ms) => ms >= 0)).toBe(true);
    expect(startup.modulesMs).toBeGreaterThan(0);
    expect(startup.snapshotLoadMs).toBe(0);
    expect(startup.modulesMs! + startup.warmupMs! + startup.otherMs!).toBeCloseTo(startup.totalMs!, 0);
    const exposition = parseExposition(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
    expect(sampleValue(exposition, 'kvstore_start_duration_seconds')! * 1000).toBeCloseTo(startup.totalMs!, 0);
    const c = await LineClient.connect(port);
    expect(await c.request('SET k v')).toBe('OK');
    expect(await proc.stop('SIGTERM')).toBe(0);
    await c.closed;
  });

  it("runs with glibc's mmap threshold fixed: set with mallopt when its environment lacks it, an operator's kept", async () => {
    const env = (tunables: string) => ({ STORE_PORT: '0', STORE_METRICS_PORT: '0', GLIBC_TUNABLES: tunables });
    const ready = (p: ServiceProcess) => p.logs.find((l) => l.msg === STORE_READY)!;
    const bare = await startServiceProcess(storeScript, env('glibc.malloc.arena_max=2'), STORE_READY);
    track({ destroy: () => bare.child.kill('SIGKILL') });
    const own = await startServiceProcess(storeScript, env('glibc.malloc.mmap_threshold=131072'), STORE_READY);
    track({ destroy: () => own.child.kill('SIGKILL') });
    if (mallocMmapThreshold({ GLIBC_TUNABLES: `glibc.malloc.mmap_threshold=${MMAP_THRESHOLD_BYTES}` }) === null) {
      expect(ready(bare).mallocMmapThreshold).toBeNull(); // not glibc: nothing to fix
      expect(ready(bare).mallocArenaMax).toBeNull();
      expect(ready(bare).mallocMmapThresholdSetBy).toBeNull();
      expect(ready(bare).arenaPagesThreaded).toBe(false);
    } else {
      expect(ready(bare).mallocMmapThreshold).toBe(MMAP_THRESHOLD_BYTES);
      // With the add-on, mallopt sets it in the process as it runs; without, the process
      // replaced itself with the tunable added (exec keeps the PID and its pipes, so the
      // ready line came on the same stdout).
      const addon = loadSocketIo();
      const withMallopt = 'io' in addon && typeof addon.io.mallopt === 'function';
      expect(ready(bare).mallocMmapThresholdSetBy).toBe(withMallopt ? 'mallopt' : 'environment');
      // The record arena's pages are mapped one by one by the add-on; without its mapPage they
      // come from a thread of their own (page-source.ts), named so that ps -L, top -H and
      // traces tell it from other Node worker threads.
      const withMapPage = 'io' in addon && typeof addon.io.mapPage === 'function';
      expect(ready(bare).arenaPagesMapped).toBe(withMapPage);
      expect(ready(bare).arenaPagesThreaded).toBe(!withMapPage);
      expect(threadsOf(bare.pid).filter((t) => t.name === PAGE_THREAD_NAME)).toHaveLength(withMapPage ? 0 : 1);
      expect(readFileSync(`/proc/${bare.pid}/cmdline`, 'latin1').split('\0').some((arg) => arg.endsWith(storeScript))).toBe(true);
      // A threshold the operator set is kept.
      expect(ready(own).mallocMmapThreshold).toBe(131072);
      expect(ready(own).mallocMmapThresholdSetBy).toBe('environment');
      // So is an arena limit; without one the store sets its own with mallopt.
      expect(ready(bare).mallocArenaMax).toBe(2);
      expect(ready(bare).mallocArenaMaxSetBy).toBe('environment');
      expect(ready(own).mallocArenaMax).toBe(withMallopt ? MALLOC_ARENAS : null);
      expect(ready(own).mallocArenaMaxSetBy).toBe(withMallopt ? 'mallopt' : null);
    }
    // The metrics say the same as the ready line, and that the thread was not given up.
    const metrics = parseExposition(await (await fetch(`http://127.0.0.1:${ready(bare).metricsPort as number}/metrics`)).text());
    expect(sampleValue(metrics, 'kvstore_memory_arena_pages_threaded')).toBe(ready(bare).arenaPagesThreaded ? 1 : 0);
    expect(sampleValue(metrics, 'kvstore_memory_arena_pages_mapped')).toBe(ready(bare).arenaPagesMapped ? 1 : 0);
    // Idle since it started: malloc's free memory (the warm-up's compiler work) goes back to the OS.
    if (ready(bare).arenaPagesMapped) {
      const trims = async () => sampleValue(parseExposition(await (await fetch(`http://127.0.0.1:${ready(bare).metricsPort as number}/metrics`)).text()), 'kvstore_memory_malloc_trims_total');
      await vi.waitUntil(async () => ((await trims()) ?? 0) >= 1, { timeout: 15_000, interval: 100 });
    }
    expect(sampleValue(metrics, 'kvstore_memory_arena_page_thread_fallbacks_total')).toBe(0);
    expect(await bare.stop('SIGTERM')).toBe(0);
    expect(await own.stop('SIGTERM')).toBe(0);
  });

  it("turns on Node's compile cache before the store's modules load (in the OS's temporary directory by default) and writes it once the store has started", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvstore-compile-cache-'));
    track({ destroy: () => rmSync(dir, { recursive: true, force: true }) });
    // No NODE_COMPILE_CACHE, which would have Node turn the cache on by itself: main.ts does.
    const env = { STORE_PORT: '0', STORE_METRICS_PORT: '0', STORE_WARMUP_KEYS: '0', TMPDIR: dir, NODE_COMPILE_CACHE: '' };
    const proc = await startServiceProcess(storeScript, env, STORE_READY);
    track({ destroy: () => proc.child.kill('SIGKILL') });
    const entries = (): number => compileCacheEntries(dir);
    // An entry per module compiled, the store's and its dependencies', written while the
    // store serves (main.ts flushes the cache once it has started), not only as it leaves:
    // a store that is killed keeps them.
    await vi.waitFor(() => expect(entries()).toBeGreaterThan(50), { timeout: 10_000, interval: 20 });
    const written = entries();
    proc.child.kill('SIGKILL');
    await proc.exited;
    expect(entries()).toBe(written);
  });

  it('exits 0 on SIGINT', async () => {
    const proc = await startServiceProcess(storeScript, { STORE_PORT: String(await freePort()), STORE_METRICS_PORT: String(await freePort()) }, STORE_READY);
    track({ destroy: () => proc.child.kill('SIGKILL') });
    expect(await proc.stop('SIGINT')).toBe(0);
  });
});
