// Resident memory per key: 1,000,000 keys loaded into a fresh store and a fresh Redis, the
// growth of RSS over the last nine tenths of the keys. The first tenth goes in before the
// baseline is read, so that what a server pays once, whatever its keys (code compiled on
// first use, its heap's and allocator's first growth, buffers made on first need), is not
// spread over the keys as if each cost it.
import { rssOf } from './harness/proc.ts';
import { StoreConnection } from '../services/client/index.ts';
import { kvBench } from './harness/processes.ts';
import { scrape } from './harness/scrape.ts';
import { startRedis, startStore, type Service } from './harness/services.ts';
import { STORE_ENV, type Settings } from './bench-settings.ts';
import { redisCommand } from './redis/redis-command.ts';

/** Resident set size of a process in bytes (Linux /proc), or undefined elsewhere. */
function procRss(pid: number): number | undefined {
  try {
    return rssOf(pid) || undefined;
  } catch {
    return undefined;
  }
}

async function storeMetricRss(server: Service): Promise<number | undefined> {
  return (await scrape(server.metricsPort!)).get('process_resident_memory_bytes');
}

async function redisRss(server: Service): Promise<{ rss: number; method: string }> {
  const fromProc = procRss(server.pid);
  if (fromProc !== undefined) return { rss: fromProc, method: '/proc/<pid>/status VmRSS' };
  const info = await redisCommand(server.port, 'INFO memory');
  return { rss: Number(/used_memory_rss:(\d+)/.exec(info)![1]), method: 'INFO memory used_memory_rss' };
}

async function storeRss(server: Service): Promise<{ rss: number; method: string }> {
  const fromProc = procRss(server.pid);
  if (fromProc !== undefined) return { rss: fromProc, method: '/proc/<pid>/status VmRSS' };
  return { rss: (await storeMetricRss(server))!, method: '/metrics process_resident_memory_bytes' };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface MemoryResult {
  readonly keys: number;
  /** RSS of the empty process. */
  readonly baselineBytes: number;
  /** Keys loaded before the baseline of the per-key figure, and RSS then. */
  readonly firstKeys: number;
  readonly firstBytes: number;
  readonly loadedBytes: number;
  readonly bytesPerKey: number;
  readonly method: string;
  readonly loadCommand: string;
  readonly serverCommand: string;
  readonly note?: string;
}

export async function memoryPerKey(kind: 'kvstack' | 'redis', s: Settings): Promise<MemoryResult> {
  const server = kind === 'kvstack' ? await startStore({ env: STORE_ENV, detached: true }) : await startRedis({ detached: true });
  try {
    const rss = kind === 'kvstack' ? storeRss : redisRss;
    // Baseline: the empty process after one round trip (so connection buffers exist).
    if (kind === 'kvstack') {
      const c = new StoreConnection({ host: '127.0.0.1', port: server.port });
      await c.ping();
      c.destroy();
    } else {
      await redisCommand(server.port, 'PING');
    }
    await settle(500);
    const empty = await rss(server);
    const loadArgs = (keys: number) => ['--host', '127.0.0.1', '--port', String(server.port), '-n', '0', '-r', String(keys), '--value-size', String(s.valueSize), '-c', String(s.connections)];
    const protocol = kind === 'redis' ? 'resp' : 'line';
    // The first tenth (keys 0 to n/10 - 1); the full load writes them again, the same size, and the rest after them.
    const firstKeys = Math.round(s.memoryKeys / 10);
    await kvBench(loadArgs(firstKeys), protocol);
    await settle(1000);
    const before = await rss(server);
    const load = await kvBench(loadArgs(s.memoryKeys), protocol);
    let note: string | undefined;
    if (kind === 'kvstack') {
      const c = new StoreConnection({ host: '127.0.0.1', port: server.port });
      const stats = await c.stats();
      c.destroy();
      note = `store USAGE ${Number(stats.usage_bytes) / s.memoryKeys} B/key (key + value bytes), ${stats.keys} keys`;
    } else {
      const dbsize = await redisCommand(server.port, 'DBSIZE');
      const info = await redisCommand(server.port, 'INFO memory');
      const used = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
      note = `used_memory ${Math.round(used / s.memoryKeys)} B/key, ${dbsize.trim().slice(1)} keys`;
    }
    // Let the process settle (allocator, V8's idle GC) before reading RSS.
    await settle(1000);
    const after = await rss(server);
    return {
      keys: s.memoryKeys,
      baselineBytes: empty.rss,
      firstKeys,
      firstBytes: before.rss,
      loadedBytes: after.rss,
      bytesPerKey: Math.round((after.rss - before.rss) / (s.memoryKeys - firstKeys)),
      method: after.method,
      loadCommand: load.command,
      serverCommand: server.command,
      note,
    };
  } finally {
    await server.stop();
  }
}
