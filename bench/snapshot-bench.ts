// Warm restart against Redis: the same keys (default 1,000,000 of 100 bytes) loaded into a
// fresh kvstack store and a fresh Redis; then the time to write the snapshot (kvstack: at
// SIGTERM, from its `snapshot saved` log line; Redis: the SAVE command's round trip), the
// file sizes, and the time to load it at the next start (kvstack: its `snapshot loaded`
// line; Redis: its "DB loaded from disk" line). Rounds alternate the two systems; medians
// and ranges are reported.
//
//   node bench/snapshot-bench.ts [--keys n] [--value-size b] [--rounds n] [--no-redis]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLogLine } from '../services/shared/ready-line.ts';
import { medianWithRange } from './harness/median.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { kvBench } from './harness/processes.ts';
import { redisAvailable, startRedis as startRedisService, startStore as startStoreService, type Service } from './harness/services.ts';
import { redisCommand } from './redis/redis-command.ts';

interface Round {
  readonly saveMs: number;
  readonly loadMs: number;
  readonly bytes: number;
  readonly keys: number;
}

const values = parseOptions('Usage: node bench/snapshot-bench.ts [--keys n] [--value-size b] [--rounds n] [--no-redis]', {
  keys: { type: 'string' },
  'value-size': { type: 'string' },
  rounds: { type: 'string' },
  redis: { type: 'boolean', default: true },
});
const keys = numberOption('--keys', values.keys, 1_000_000, { min: 1, integer: true });
const valueSize = numberOption('--value-size', values['value-size'], 100, { integer: true });
const rounds = numberOption('--rounds', values.rounds, 3, { min: 1, integer: true });
const log = (text: string) => process.stderr.write(`snapshot-bench: ${text}\n`);

function load(port: number, protocol: 'line' | 'resp') {
  const args = ['--host', '127.0.0.1', '--port', String(port), '-n', '0', '-r', String(keys), '--value-size', String(valueSize), '-c', '50'];
  return kvBench(args, protocol);
}

/** Starts a store with the snapshot at `path`, collecting its JSON log lines. */
async function startStore(path: string): Promise<{ p: Service; logs: Record<string, unknown>[] }> {
  const logs: Record<string, unknown>[] = [];
  const p = await startStoreService({
    env: { MAX_MEMORY_BYTES: String(8 * 1024 ** 3), STORE_SNAPSHOT_PATH: path },
    onLine: (line) => {
      const entry = parseLogLine(line);
      if (entry) logs.push(entry);
    },
    timeoutMs: 600_000,
    detached: true,
  });
  return { p, logs };
}

async function kvstackRound(): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'kvstack-snapbench-'));
  const path = join(dir, 'store.snapshot');
  try {
    const first = await startStore(path);
    await load(first.p.port, 'line');
    await first.p.stop('SIGTERM', 600_000);
    const saved = first.logs.find((l) => l.msg === 'snapshot saved');
    if (!saved) throw new Error('the store wrote no snapshot');
    const second = await startStore(path);
    const loaded = second.logs.find((l) => l.msg === 'snapshot loaded')!;
    second.p.kill();
    return { saveMs: saved.ms as number, loadMs: loaded.ms as number, bytes: saved.bytes as number, keys: loaded.keys as number };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function startRedis(dir: string, lines: string[]): Promise<Service> {
  return startRedisService({
    args: ['--dir', dir, '--dbfilename', 'dump.rdb', '--save', '', '--appendonly', 'no'],
    onLine: (line) => lines.push(line),
    timeoutMs: 600_000,
    detached: true,
  });
}

async function redisRound(): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-snapbench-'));
  try {
    const first = await startRedis(dir, []);
    await load(first.port, 'resp');
    const t0 = performance.now();
    const reply = await redisCommand(first.port, 'SAVE');
    const saveMs = performance.now() - t0;
    if (!reply.startsWith('+OK')) throw new Error(`SAVE answered ${reply}`);
    first.kill();
    await first.exited;
    const lines: string[] = [];
    const second = await startRedis(dir, lines);
    const loadedLine = lines.find((l) => l.includes('DB loaded from disk'));
    const dbsize = Number((await redisCommand(second.port, 'DBSIZE')).slice(1));
    second.kill();
    const seconds = Number(/DB loaded from disk: ([\d.]+) seconds/.exec(loadedLine ?? '')?.[1]);
    return { saveMs, loadMs: seconds * 1000, bytes: statSync(join(dir, 'dump.rdb')).size, keys: dbsize };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}


const withRedis = values.redis && redisAvailable();
const results: Record<'kvstack' | 'redis', Round[]> = { kvstack: [], redis: [] };
for (let r = 1; r <= rounds; r++) {
  const order: ('kvstack' | 'redis')[] = r % 2 === 1 ? ['kvstack', 'redis'] : ['redis', 'kvstack'];
  for (const system of order) {
    if (system === 'redis' && !withRedis) continue;
    log(`${system}, round ${r}/${rounds}: ${keys} keys of ${valueSize} bytes ...`);
    results[system].push(system === 'kvstack' ? await kvstackRound() : await redisRound());
  }
}
const lines = [`snapshot: ${keys} keys of ${valueSize} bytes, median (range) of ${rounds} rounds, Node ${process.version}`, ''];
const row = (name: string, f: (r: Round) => number, digits = 0) =>
  `${name.padEnd(22)} kvstack ${medianWithRange(results.kvstack.map(f), digits).padEnd(26)} ${withRedis ? `Redis ${medianWithRange(results.redis.map(f), digits)}` : ''}`;
lines.push(row('save ms', (r) => r.saveMs), row('load ms', (r) => r.loadMs), row('file MiB', (r) => r.bytes / 2 ** 20, 1));
lines.push(`keys loaded: kvstack ${results.kvstack.map((r) => r.keys).join(', ')}; Redis ${results.redis.map((r) => r.keys).join(', ')}`);
process.stdout.write(lines.join('\n') + '\n');
