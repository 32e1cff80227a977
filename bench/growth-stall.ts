// Stalls the store makes its clients see while it grows, and while it sweeps an expiry storm.
//
//   node bench/growth-stall.ts [--mode load|storm|snapshot] [--keys N] [--value-bytes 100]
//        [--ttl 2] [--conns 2] [--batch 256] [--target kvstack|redis|kvstack-no-saves|both]
//        [--kvload <path>] [--prober-nice N] [--prober-fifo] [--server-nice N] [--server-cpus L --client-cpus L]
//        [--store-node-args="..."]
//        [--trace-turns] [--trace-steal] [--rounds N]
//
// Starts the store (and/or redis-server) as a child process. A loader pipelines SETs of N
// keys (default 8,000,000 for --mode load) over a few connections while a prober, on its
// own thread and connection, sends PING every millisecond and records every round trip
// (bench/stall-prober.ts). Each phase reports its figures, its `longest` round trips with
// when each was sent (seconds into the phase), and its worst after its first second
// (`worstAfterFirstSecondMs`): a server that has just started takes up its first pipelined
// writes then, once, and the worst of a load often falls in its first 100 ms
// (docs/benchmarks.md#pauses-during-growth).
//   --mode load   the worst round trip while the keys go in: the hash table and the slot
//                 arrays grow the whole time, so a stop-the-world growth shows as a stall.
//   --mode storm  SETEX with --ttl seconds (default 1,000,000 keys, 2 s): the keys expire
//                 within about as long as they took to load. Reports how long after the
//                 last expiry USAGE (Redis: DBSIZE) reaches 0, and the worst PING while
//                 the sweep works.
//   --mode snapshot  periodic snapshots under load (kvstack: STORE_SNAPSHOT_INTERVAL_S=1;
//                 Redis: `save 1 1`, a forked BGSAVE every second): loads the keys (default
//                 1,000,000), then overwrites them all again while saves run; reports the
//                 worst PING of that phase and how many saves completed in it. With
//                 --target both, also the store under the same load without saves.
//   --kvload <path>  writes the keys with the C load generator kvload (its prefill, -L)
//                 instead of this process's own JavaScript pipeline, which on a 2-core
//                 machine takes a core from the server and the prober (load and snapshot
//                 modes; kvload has no SETEX). In snapshot mode its overwrite phase is 8 s
//                 of SETs of random keys, long enough for several saves.
//   --prober-nice N  runs the prober's thread at nice N (-20 for the highest; root only).
//                 On a 2-core machine the loader and the server keep both cores busy, so a
//                 prober at normal priority waits for a core too, and its worst round trip
//                 is partly its own scheduling; raised, it measures the server's delay.
//                 Reports the nice value it got (or "unchanged") and p99/p99.9 per phase.
//                 A nice value orders threads only within their scheduling group, though:
//                 with autogroup on (most distributions), each session is a group, and the
//                 server and kvload run in sessions of their own, so the prober still waits
//                 for them, up to a scheduler tick (4 ms at 250 Hz).
//   --prober-fifo  runs the prober's thread in the real-time class (SCHED_FIFO, priority 1,
//                 with chrt; root only): it runs as soon as it wakes, whatever group wants
//                 the CPU, so its wake-up is no longer part of the round trip. Not free: a
//                 Node thread, it runs a few % of a core, and takes the server's core when
//                 it wakes there (~0.05 ms a time). Reported as proberFifo.
//   --server-nice N  runs the server's serving thread (the process's main thread: the
//                 store's event loop, Redis's) at nice N (root for below 0); the other
//                 threads keep theirs. With the loader and the prober on the same two
//                 cores, the server then waits less for a core: what is left of a worst
//                 round trip is the server's own work and the machine's steal.
//   --server-cpus L --client-cpus L  pins the server (every thread of it, with taskset)
//                 to the CPUs in list L and this process (loader, prober) and kvload to
//                 the others: a server given one core, as a container with a CPU limit of 1.
//   --store-node-args="..."  Node flags for the store process (e.g. --single-threaded-gc).
//   --trace-turns  records the store's event-loop turns with `perf` over the measured
//                 phases (bench/turn-trace.ts; Linux, root): how long they were by the clock
//                 and how much CPU they held, and how many long turns had a stretch the
//                 hypervisor took. Reported as `turns` (the store only; Redis's loop is not
//                 traced).
//   --trace-steal  records every CPU with `perf` over the measured phases (bench/thread-steal.ts;
//                 Linux, root) to find the stretches the hypervisor stopped the server's
//                 serving thread or the prober's thread, and reports each phase's round trips
//                 again with those stretches taken out (`lessSteal`): what is left is the
//                 server's own delay, and the machine's that the trace cannot see (steal on
//                 the other CPU, a thread waiting for a core, a halted CPU woken late).
//                 Its `worst` are the three longest of those, each with what the serving
//                 thread did meanwhile: on a CPU, stolen there, ready but off a CPU
//                 (preempted), asleep (waiting for input, or woken and not yet run); and its
//                 `path` (bench/round-trip-path.ts, from the serving thread's epoll returns,
//                 reads and writes): `unreadMs`, at least how long the PING could not be read
//                 yet (polls of the sockets came without it); `toReply`, the serving thread from then to its
//                 reply's write (the server's own delay is within it); `backMs`, from that
//                 write to the prober's read (the way back and the prober's wake-up). And
//                 `serverPreemptedBy`: the threads that had the serving thread's CPU while it
//                 was ready to run, and for how long (the server's own marked "(same
//                 process)"; the prober's thread is "kvprober"). Both servers alike.
//   --rounds N    runs every target N times, in turn (default 1), and ends with a table of
//                 the measured phase's figures (load, sweep or overwrite): medians with
//                 their ranges over all rounds, and over the quiet ones, those in which no
//                 target's phase lost more than 1.5% of the machine's CPU time to steal
//                 (bench/stall-rounds.ts).
// Each phase also reports stealMs: the time the hypervisor took the machine's virtual CPUs
// away during it (/proc/stat, summed over the CPUs). On a shared VM it comes in stretches
// of several ms at a time, during which the server on that CPU is stopped: a worst round
// trip in a phase with steal is the machine's as much as the server's, as Redis's figure
// beside it shows (docs/benchmarks.md#pauses-during-growth).
// Redis is driven with the same loader (inline commands), for its figure beside ours. This
// is a measurement, not a test: on a shared machine the scheduler alone can add
// milliseconds to any round trip, so compare runs made close together.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipelineLines } from '../services/client/line-pipeline.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { armedKvloadFill, armedKvloadRun } from './harness/processes.ts';
import { redisAvailable, startRedis, startStore } from './harness/services.ts';
import { stealStopwatch } from './harness/process-cpu.ts';
import { pathOf, type ServerLoop } from './round-trip-path.ts';
import { longestIndexes, longestRoundTrips, pongBytes, realTimeUnavailable, StallProber, worstAfter, type RoundTrips } from './stall-prober.ts';
import { renderStallRounds, type StallPhase } from './stall-rounds.ts';
import { coveredMs, lessStolen, startStealTrace, stealTraceUnavailable, windowOf, type ServerTrace, type Stretch } from './thread-steal.ts';
import { startTurnTrace, turnTraceUnavailable } from './turn-trace.ts';

/** With kvload the keys go in fast: the overwrite phase runs this long, for several saves. */
const OVERWRITE_SECONDS = 8;
const nowMs = (): number => performance.timeOrigin + performance.now();
/** A phase's longest round trips shown with when they were sent (`longest`). */
const LONGEST_SHOWN = 5;

interface PhaseStats {
  pings: number;
  worstMs: number;
  over1Ms: number;
  over5Ms: number;
  /** The 99th and 99.9th percentile round trips, ms. */
  p99Ms: number;
  p999Ms: number;
}

/** A phase's figures from its round trips (ms, in the order they came). */
function phaseStats(rtts: readonly number[]): PhaseStats {
  const sorted = Float64Array.from(rtts).sort();
  const ms = (v: number | undefined): number => +(v ?? 0).toFixed(2);
  const at = (q: number): number => ms(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
  return {
    pings: sorted.length,
    worstMs: ms(sorted.at(-1)),
    over1Ms: rtts.filter((r) => r > 1).length,
    over5Ms: rtts.filter((r) => r > 5).length,
    p99Ms: at(0.99),
    p999Ms: at(0.999),
  };
}

/** A phase's figures with the stretches `stolen` took from the server's and the prober's threads taken out of each round trip. */
function lessStealStats(trips: RoundTrips, stolen: readonly Stretch[], server: ServerTrace, loop: ServerLoop | undefined) {
  const n = trips.sent.length;
  const threadsStolenMs = n === 0 ? 0 : coveredMs(stolen, trips.sent[0]!, trips.sent[n - 1]! + trips.rtts[n - 1]!);
  const less = lessStolen(trips.sent, trips.rtts, stolen);
  // The three longest round trips less steal, each with what the serving thread did
  // meanwhile, and where on its way the PING spent the time (round-trip-path.ts).
  const worst = longestIndexes(less, 3).map((i) => {
    const sent = trips.sent[i]!;
    const rtt = trips.rtts[i]!;
    const path = loop === undefined ? undefined : pathOf(loop, sent, rtt);
    return {
      rttMs: +rtt.toFixed(2),
      lessStealMs: +less[i]!.toFixed(2),
      server: windowOf(server, sent, sent + rtt),
      ...(path === undefined ? {} : { path: { unreadMs: path.unreadMs, toReply: windowOf(server, path.fromMs, path.replyMs), backMs: path.backMs } }),
    };
  });
  return { ...phaseStats([...less]), threadsStolenMs: Math.round(threadsStolenMs), worst };
}

const USAGE = 'Usage: node bench/growth-stall.ts [--mode load|storm|snapshot] [--keys N] [--value-bytes B] [--ttl S] [--conns C] [--batch B] [--target kvstack|redis|kvstack-no-saves|both] [--kvload <path>] [--prober-nice N] [--prober-fifo] [--server-nice N] [--server-cpus L --client-cpus L] [--store-node-args="..."] [--trace-turns] [--trace-steal] [--rounds N]';

async function main(): Promise<void> {
  const opts = parseOptions(USAGE, {
    mode: { type: 'string', default: 'load' },
    keys: { type: 'string' },
    'value-bytes': { type: 'string' },
    ttl: { type: 'string' },
    conns: { type: 'string' },
    batch: { type: 'string' },
    target: { type: 'string', default: 'kvstack' },
    kvload: { type: 'string' },
    'prober-nice': { type: 'string' },
    'prober-fifo': { type: 'boolean', default: false },
    'server-nice': { type: 'string' },
    'server-cpus': { type: 'string' },
    'client-cpus': { type: 'string' },
    'store-node-args': { type: 'string' },
    'trace-turns': { type: 'boolean', default: false },
    'trace-steal': { type: 'boolean', default: false },
    rounds: { type: 'string' },
  });
  const mode = opts.mode;
  if (mode !== 'load' && mode !== 'storm' && mode !== 'snapshot') throw new Error('--mode must be load, storm or snapshot');
  const count = (name: 'keys' | 'rounds' | 'value-bytes' | 'ttl' | 'conns' | 'batch', fallback: number): number => numberOption(`--${name}`, opts[name], fallback, { min: 1, integer: true });
  const keys = count('keys', mode === 'load' ? 8_000_000 : 1_000_000);
  const rounds = count('rounds', 1);
  if (opts.kvload !== undefined && mode === 'storm') throw new Error('--kvload writes with SET only: it covers --mode load and snapshot, not storm');
  const settings = {
    mode,
    keys,
    kvload: opts.kvload,
    valueBytes: count('value-bytes', 100),
    ttl: count('ttl', 2),
    conns: count('conns', 2),
    batch: count('batch', 256),
    proberNice: niceOption('prober-nice', opts['prober-nice']),
    proberFifo: opts['prober-fifo'],
    serverNice: niceOption('server-nice', opts['server-nice']),
    traceTurns: opts['trace-turns'],
    traceSteal: opts['trace-steal'],
  };
  const untraceable = settings.traceTurns ? turnTraceUnavailable() : undefined;
  if (untraceable !== undefined) throw new Error(`--trace-turns: ${untraceable}`);
  const noFifo = settings.proberFifo ? realTimeUnavailable() : undefined;
  if (noFifo !== undefined) throw new Error(`--prober-fifo: ${noFifo}`);
  const noStealTrace = settings.traceSteal ? stealTraceUnavailable() : undefined;
  if (noStealTrace !== undefined) throw new Error(`--trace-steal: ${noStealTrace}`);
  if ((opts['server-cpus'] === undefined) !== (opts['client-cpus'] === undefined)) throw new Error('--server-cpus and --client-cpus go together');
  const serverCpus = opts['server-cpus'];
  // Threads made later (the prober) and children (kvload) inherit this process's CPUs.
  if (opts['client-cpus'] !== undefined) pinCpus(process.pid, opts['client-cpus']);
  const storeNodeArgs = opts['store-node-args']?.split(' ').filter((a) => a !== '') ?? [];
  // In snapshot mode `both` also runs the store without saves under the same load: what
  // the saves add is the difference, the rest is the store's own (collections, scheduling).
  const all = mode === 'snapshot' ? ['kvstack', 'kvstack-no-saves', 'redis'] : ['kvstack', 'redis'];
  const targets = opts.target === 'both' ? all : [opts.target];
  for (const t of targets) {
    if (!all.includes(t)) throw new Error(`--target must be ${all.join(', ')} or both`);
    if (t === 'redis' && !redisAvailable()) throw new Error('redis-server is not on PATH');
  }
  // The phase the rounds' table reports: the one each mode is about.
  const measured = mode === 'load' ? 'load' : mode === 'storm' ? 'sweep' : 'overwrite';
  const byTarget = new Map<string, StallPhase[]>(targets.map((t) => [t, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const t of targets) {
      if (rounds > 1) console.error(`growth-stall: ${t}, round ${round}/${rounds} ...`);
      const result = await runTarget(t, mode, settings, storeNodeArgs, serverCpus, opts['client-cpus']);
      byTarget.get(t)!.push(result[measured] as StallPhase);
    }
  }
  if (rounds > 1) console.log(renderStallRounds(byTarget, measured, availableParallelism()));
}

/** Starts target `t`, measures it once (printing its JSON line) and stops it; returns the figures. */
async function runTarget(t: string, mode: string, settings: Settings, storeNodeArgs: readonly string[], serverCpus: string | undefined, clientCpus: string | undefined): Promise<Record<string, unknown>> {
  const snapshots = mode === 'snapshot' && t !== 'kvstack-no-saves';
  const server = t === 'redis' ? await redisTarget(snapshots) : await storeTarget(snapshots, storeNodeArgs);
  try {
    if (serverCpus !== undefined) pinCpus(server.child.pid!, serverCpus);
    // The thread whose id is the pid: the main thread only (setpriority on Linux).
    if (settings.serverNice !== undefined) setPriority(server.child.pid!, settings.serverNice);
    const result = await measure(server, settings);
    const pinned = serverCpus === undefined ? {} : { serverCpus, clientCpus };
    const nodeArgs = t === 'redis' || storeNodeArgs.length === 0 ? {} : { storeNodeArgs };
    console.log(JSON.stringify({ target: t, ...settings, ...pinned, ...nodeArgs, kvload: undefined, traceTurns: undefined, traceSteal: undefined, writer: settings.kvload === undefined ? 'node' : 'kvload', ...result }));
    return result;
  } finally {
    server.child.kill('SIGKILL');
    await once(server.child, 'exit').catch(() => {});
  }
}

interface Target {
  readonly child: ChildProcess;
  readonly port: number;
  /** Redis speaks inline commands with CRLF; its empty-check is DBSIZE. */
  readonly redis: boolean;
  /** Snapshots completed so far (counted from the server's log). */
  readonly saves: () => number;
}

/** Every thread of process `pid` to the CPUs in `list` (taskset's syntax, e.g. 1 or 0,2-3). */
function pinCpus(pid: number, list: string): void {
  const r = spawnSync('taskset', ['-a', '-p', '-c', list, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset -a -p -c ${list} ${pid} failed: ${r.error?.message ?? r.stderr.trim()}`);
}

async function storeTarget(snapshots = false, nodeArgs: readonly string[] = []): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'growth-stall-'));
  const env: Record<string, string> = snapshots ? { STORE_SNAPSHOT_PATH: join(dir, 'store.snapshot'), STORE_SNAPSHOT_INTERVAL_S: '1' } : {};
  let saves = 0;
  const p = await startStore({ env: { MAX_MEMORY_BYTES: String(16 * 1024 ** 3), ...env }, onLine: (line) => void (line.includes('"snapshot saved"') && saves++), nodeArgs });
  p.child.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return { child: p.child, port: p.port, redis: false, saves: () => saves };
}

async function redisTarget(snapshots = false): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'growth-stall-redis-'));
  const save = snapshots ? ['--save', '1 1', '--dir', dir] : ['--save', ''];
  let saves = 0;
  const p = await startRedis({
    args: [...save, '--appendonly', 'no'],
    onLine: (line) => void (line.includes('Background saving terminated with success') && saves++),
  });
  p.child.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return { child: p.child, port: p.port, redis: true, saves: () => saves };
}

async function open(port: number): Promise<Socket> {
  const sock = connect({ port, host: '127.0.0.1', noDelay: true });
  await once(sock, 'connect');
  return sock;
}

/** Sends `total` commands made by `line(i)` over `conns` connections, `batch` per write, two batches in flight each. */
async function pipeline(port: number, total: number, conns: number, batch: number, line: (i: number) => string): Promise<void> {
  let next = 0;
  const nextLine = (): string | undefined => (next < total ? line(next++) : undefined);
  await Promise.all(
    Array.from({ length: conns }, async () => {
      const sock = await open(port);
      await pipelineLines(sock, nextLine, { batch });
      sock.destroy();
    }),
  );
}

/** One request/reply at a time: the reply line without its line end. */
async function ask(sock: Socket, command: string): Promise<string> {
  sock.write(command);
  let got = '';
  while (!got.includes('\n')) {
    const [chunk] = (await once(sock, 'data')) as [Buffer];
    got += chunk.toString();
  }
  return got.trim();
}

/** kvload against the target with the bench's connections, depth, keyspace and value size. */
function kvloadArgs(target: Target, s: Settings): string[] {
  return ['-m', target.redis ? 'resp' : 'line', '-p', String(target.port), '-c', String(s.conns), '-P', String(s.batch), '-k', String(s.keys), '-v', String(s.valueBytes)];
}

/**
 * Every key written once, by kvload (-L) when given, else by this process's own pipeline:
 * returns the call that writes them. kvload's process is started before that call (see
 * armed in harness/processes.ts), so the phase's first round trips do not time the fork.
 */
function writeAll(target: Target, s: Settings, line: (i: number) => string): () => Promise<void> {
  if (s.kvload === undefined) return () => pipeline(target.port, s.keys, s.conns, s.batch, line);
  const fill = armedKvloadFill(s.kvload, kvloadArgs(target, s));
  return async () => {
    const { command, errors } = await fill();
    if (errors > 0) throw new Error(`${errors} error replies in: ${command}`);
  };
}

/** kvload's SETs of random keys of the keyspace (no prefill) for `seconds`: returns the call that runs them (started as writeAll's). */
function overwriteFor(target: Target, s: Settings, seconds: number): () => Promise<void> {
  const run = armedKvloadRun(s.kvload!, [...kvloadArgs(target, s), '-N', '-r', '0', '-w', '0', '-d', String(seconds)]);
  return async () => {
    const { command, result } = await run();
    if (result.errors > 0) throw new Error(`${result.errors} error replies in: ${command}`);
  };
}

interface Settings {
  readonly mode: string;
  readonly keys: number;
  readonly kvload: string | undefined;
  readonly valueBytes: number;
  readonly ttl: number;
  readonly conns: number;
  readonly batch: number;
  readonly proberNice: number | undefined;
  readonly proberFifo: boolean;
  readonly serverNice: number | undefined;
  readonly traceTurns: boolean;
  readonly traceSteal: boolean;
}

function niceOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < -20 || n > 19) throw new Error(`--${name} must be an integer from -20 to 19, got ${text}`);
  return n;
}

async function measure(target: Target, s: Settings) {
  const prober = await StallProber.start({ port: target.port, redis: target.redis, nice: s.proberNice, fifo: s.proberFifo });
  const eol = target.redis ? '\r\n' : '\n';
  const value = 'v'.repeat(s.valueBytes);
  const key = (i: number) => `key:${String(i).padStart(10, '0')}`;
  const line = s.mode === 'load' ? (i: number) => `SET ${key(i)} ${value}${eol}` : (i: number) => `SETEX ${key(i)} ${s.ttl} ${value}${eol}`;

  // The hypervisor's steal time during each phase (see machineStealSeconds), beside its round trips.
  // And how long each phase ran, for the share of the machine's time that steal took.
  const stealMs: Record<string, number> = {};
  const phaseSeconds: Record<string, number> = {};
  let phase: { readonly name: string; readonly steal: () => number | undefined; readonly startedAt: number } | undefined;
  const startPhase = (name: string): void => {
    endPhase();
    prober.phase(name);
    phase = { name, steal: stealStopwatch(), startedAt: nowMs() };
  };
  const endPhase = (): void => {
    if (phase === undefined) return;
    const ms = phase.steal();
    if (ms !== undefined) stealMs[phase.name] = ms;
    phaseSeconds[phase.name] = +((nowMs() - phase.startedAt) / 1000).toFixed(2);
    phase = undefined;
  };

  const trace = s.traceTurns && !target.redis ? await startTurnTrace(target.child.pid!) : undefined;
  // The serving thread is the process's main thread: its id is the pid (Redis's and Node's).
  const stealTrace = s.traceSteal ? await startStealTrace(target.child.pid!, pongBytes(target.redis)) : undefined;
  const load = writeAll(target, s, line);
  startPhase('load');
  const t0 = nowMs();
  await load();
  const loadedAt = nowMs();
  const result: Record<string, unknown> = { loadSeconds: +((loadedAt - t0) / 1000).toFixed(2) };

  if (s.mode === 'storm') {
    // Every key has expired by loadedAt + ttl; wait for the store to report nothing held.
    startPhase('sweep');
    const check = await open(target.port);
    const emptyCommand = target.redis ? `DBSIZE${eol}` : `USAGE${eol}`;
    const empty = target.redis ? ':0' : 'USAGE 0';
    let reply = '';
    let countAtExpiry: string | undefined;
    const lastExpiry = loadedAt + s.ttl * 1000;
    for (;;) {
      reply = await ask(check, emptyCommand);
      if (countAtExpiry === undefined && nowMs() >= lastExpiry) countAtExpiry = reply;
      if (reply === empty) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const emptyAt = nowMs();
    check.destroy();
    result.atLastExpiry = countAtExpiry;
    result.emptySecondsAfterLastExpiry = +((emptyAt - lastExpiry) / 1000).toFixed(2);
  } else if (s.mode === 'snapshot') {
    // Every key overwritten again while the periodic snapshots run.
    const overwrite = s.kvload === undefined ? writeAll(target, s, (i: number) => `SET ${key(i)} ${value}${eol}`) : overwriteFor(target, s, OVERWRITE_SECONDS);
    startPhase('overwrite');
    const savesBefore = target.saves();
    const t1 = nowMs();
    await overwrite();
    result.overwriteSeconds = +((nowMs() - t1) / 1000).toFixed(2);
    result.savesDuringOverwrite = target.saves() - savesBefore;
  } else {
    await new Promise((r) => setTimeout(r, 300));
  }
  endPhase();
  if (trace !== undefined) result.turns = await trace.stop();
  const { phases, proberNice, proberTid } = await prober.stop();
  const traced = stealTrace === undefined ? undefined : await stealTrace.stop(proberTid);
  if (traced !== undefined) result.serverPreemptedBy = traced.server.preemptedBy;
  for (const [name, trips] of Object.entries(phases)) {
    const lessSteal = traced === undefined ? {} : { lessSteal: lessStealStats(trips, traced.stolen, traced.server, traced.loop) };
    result[name] = { ...phaseStats(trips.rtts), longest: longestRoundTrips(trips, LONGEST_SHOWN), worstAfterFirstSecondMs: worstAfter(trips, 1000), ...(stealMs[name] === undefined ? {} : { stealMs: stealMs[name] }), seconds: phaseSeconds[name], ...lessSteal };
  }
  result.proberNice = proberNice;
  return result;
}

await main();
