// `npm run bench`: the kvstack store against Redis with the same client (`kv bench`'s
// load generator, over RESP for Redis through bench/redis/, or the C load generator
// kvload with --kvload, at pipeline depth 1 and 16), the HTTP backend
// (wrk, or autocannon without it, through bench/http-bench.ts), and memory per key
// (1,000,000 keys of 100 bytes in a fresh store and a fresh Redis). Every server is a
// child process of this script and is killed when it exits, also on an error or Ctrl-C.
// Prints one table with the exact command lines; --json <file> saves it.
//
// This file orchestrates; bench-settings.ts parses the options, harness/services.ts starts
// the servers, harness/processes.ts runs the load generators, bench-memory.ts measures
// memory per key, and comparison-report.ts prints the table.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus as machineCpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { memoryPerKey, type MemoryResult } from './bench-memory.ts';
import { killAll, killChildrenOnExit, kvBench, kvloadRun, log, runToEnd, shellLine, type StoreRun } from './harness/processes.ts';
import { redisAvailable, startRedis, startStore, type Service } from './harness/services.ts';
import { coresBetween, CpuTrace, stealStopwatch, type CpuSample } from './harness/process-cpu.ts';
import { fmt, medianRun, quietRounds, quietStealBudgetMs, renderReport, roundRatios, type DepthRuns, type HttpRun } from './comparison-report.ts';
import { settings, STORE_ENV, type Settings } from './bench-settings.ts';
import type { HttpBenchReport } from './http-bench-report.ts';

type System = 'kvstack' | 'redis';

/**
 * One measured run of the store workload against one system, with the server's CPU time
 * per operation over the measured window (the last `duration` seconds of the run).
 */
async function storeLoad(s: Settings, system: System, server: Service, depth: number): Promise<StoreRun> {
  const trace = new CpuTrace(server.pid);
  const stealMs = stealStopwatch();
  let samples: readonly CpuSample[] = [];
  let run: StoreRun;
  try {
    run = await clientRun(s, system, server.port, depth);
  } finally {
    samples = trace.stop();
  }
  const endMs = performance.now();
  const cores = coresBetween(samples, endMs - s.duration * 1000, endMs);
  return {
    ...run,
    serverCpuUsPerOp: cores === undefined || run.result.opsPerSec <= 0 ? undefined : (cores * 1e6) / run.result.opsPerSec,
    stealMs: stealMs(),
  };
}

function clientRun(s: Settings, system: System, port: number, depth: number): Promise<StoreRun> {
  if (s.kvload) {
    const args = ['-m', system === 'kvstack' ? 'line' : 'resp', '-h', '127.0.0.1', '-p', String(port), '-c', String(s.connections), '-P', String(depth), '-d', String(s.duration), '-w', String(s.warmup), '-k', String(s.keyspace), '-v', String(s.valueSize), '-r', '90'];
    return kvloadRun(s.kvload, args);
  }
  const args = ['--host', '127.0.0.1', '--port', String(port), '-c', String(s.connections), '-P', String(depth), '-d', String(s.duration), '-r', String(s.keyspace), '--value-size', String(s.valueSize), '--ratio', '9:1', '--warmup', String(s.warmup)];
  if (s.threads > 1) args.push('--threads', String(s.threads));
  return kvBench(args, system === 'redis' ? 'resp' : 'line');
}

/**
 * The HTTP side: bench/http-bench.ts (wrk, else autocannon) starts its own store and one server per
 * mode (the backend as shipped, bare Express, ...), run here as a child process.
 */
async function httpBench(s: Settings): Promise<HttpRun> {
  const args = ['bench/http-bench.ts', '--duration', String(s.duration), '--warmup', String(s.warmup), '--connections', String(s.connections), '--rounds', String(s.rounds), '--json'];
  const { code, out } = await runToEnd(process.execPath, args);
  const command = shellLine({}, 'node', args);
  try {
    return { command, report: JSON.parse(out) as HttpBenchReport };
  } catch {
    throw new Error(`${command} failed (exit ${code})`);
  }
}

async function main(): Promise<void> {
  killChildrenOnExit();
  const s = settings();
  const withRedis = s.redis && redisAvailable();
  if (s.redis && !withRedis) log('redis-server is not on PATH: Redis columns are skipped');
  const cpus = machineCpus().length;
  const results: Record<string, unknown> = { date: new Date().toISOString(), node: process.version, cpus, settings: s };
  const commands: string[] = [];

  const store = await startStore({ env: STORE_ENV, detached: true });
  const storeNativeIo = typeof store.ready?.nativeIo === 'boolean' ? store.ready.nativeIo : undefined;
  commands.push(`store:   ${store.command}`);
  const redis = withRedis ? await startRedis({ detached: true }) : undefined;
  if (redis) commands.push(`redis:   ${redis.command}`);

  // Rounds interleave kvstack and Redis (alternating which goes first), so a machine
  // that gets busier or quieter during the run affects both; medians are reported.
  const depths: DepthRuns[] = [];
  const rounds: Record<string, unknown> = {};
  for (const depth of [1, 16]) {
    const runs: Record<System, StoreRun[]> = { kvstack: [], redis: [] };
    for (let round = 1; round <= s.rounds; round++) {
      const order: System[] = round % 2 === 1 || !redis ? ['kvstack', 'redis'] : ['redis', 'kvstack'];
      for (const system of order) {
        const server = system === 'kvstack' ? store : redis;
        if (server === undefined) continue;
        log(`${system === 'kvstack' ? 'kvstack' : 'Redis'}, pipeline depth ${depth}, round ${round}/${s.rounds}, ${s.duration} s ...`);
        runs[system].push(await storeLoad(s, system, server, depth));
      }
    }
    commands.push(`bench:   ${runs.kvstack[0]!.command}`);
    if (runs.redis[0]) commands.push(`bench:   ${runs.redis[0].command}`);
    const depthRuns: DepthRuns = { depth, ...runs };
    depths.push(depthRuns);
    const paired = roundRatios(depthRuns);
    const quiet = roundRatios(quietRounds(depthRuns, quietStealBudgetMs(cpus, s.duration)));
    rounds[`depth${depth}`] = {
      kvstack: medianRun(runs.kvstack)!.result,
      redis: medianRun(runs.redis)?.result ?? null,
      roundRatio: paired === undefined ? null : { median: paired.median, min: paired.min, max: paired.max },
      quietRoundRatio: quiet === undefined ? null : { median: quiet.median, min: quiet.min, max: quiet.max, rounds: quiet.each.length },
      rounds: runs.kvstack.map((k, i) => ({
        kvstack: k.result.opsPerSec,
        redis: runs.redis[i]?.result.opsPerSec ?? null,
        kvstackCpuUsPerOp: k.serverCpuUsPerOp ?? null,
        redisCpuUsPerOp: runs.redis[i]?.serverCpuUsPerOp ?? null,
        kvstackStealMs: k.stealMs ?? null,
        redisStealMs: runs.redis[i]?.stealMs ?? null,
      })),
    };
  }
  results.store = rounds;
  results.storeNativeIo = storeNativeIo ?? null;
  await redis?.stop();
  await store.stop();

  let http: HttpRun | undefined;
  if (s.http) {
    log(`HTTP backend: bench/http-bench.ts, every mode, ${s.warmup} s + ${s.duration} s each ...`);
    http = await httpBench(s);
    commands.push(`http:    ${http.command}`);
  }
  results.http = http?.report ?? null;

  let memory: { kvstack: MemoryResult; redis?: MemoryResult } | undefined;
  if (s.memoryKeys > 0) {
    log(`memory: ${fmt(s.memoryKeys)} keys of ${s.valueSize} bytes into a fresh store ...`);
    const kvMem = await memoryPerKey('kvstack', s);
    commands.push(`memory:  ${kvMem.serverCommand}`, `         ${kvMem.loadCommand}`);
    let rdMem: MemoryResult | undefined;
    if (withRedis) {
      log(`memory: ${fmt(s.memoryKeys)} keys of ${s.valueSize} bytes into a fresh Redis ...`);
      rdMem = await memoryPerKey('redis', s);
      commands.push(`memory:  ${rdMem.serverCommand}`, `         ${rdMem.loadCommand}`);
    }
    memory = { kvstack: kvMem, redis: rdMem };
  }
  results.memory = memory ?? null;
  results.commands = commands;

  process.stdout.write(renderReport({ settings: s, cpus, client: s.kvload ? 'kvload' : 'kv bench', depths, memory, http, commands, storeNativeIo }));

  if (s.jsonFile) {
    const file = resolve(process.cwd(), s.jsonFile);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
    log(`results written to ${s.jsonFile}`);
  }
}

main().then(
  () => killAll(),
  (err: unknown) => {
    killAll();
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
