// The time the hypervisor took from chosen threads (the server's serving thread, the
// prober's), seen from inside the guest with `perf` over every CPU (Linux; root), and each
// round trip less the part of it those threads lost.
//
// Why: on a shared VM the hypervisor stops a virtual CPU for one to tens of milliseconds at
// a time (steal). A server whose thread is stopped answers late through no work of its own,
// so over a long load with seconds of steal no server's worst round trip stays short
// (docs/benchmarks.md#pauses-during-growth).
// /proc/stat counts steal per CPU in 10-ms ticks with no time of day; this finds the
// stretches themselves. Each CPU is sampled every 0.5 ms of its running time (cpu-clock),
// and every switch between threads is recorded: while a thread is on a CPU, its events
// come at most 0.5 ms apart, so a longer stretch with none is time that CPU did not run
// at all. A stretch is counted only while a chosen thread was the one on the CPU: steal on
// another CPU, or a thread waiting for a core, is left in the round trip (the figure is a
// lower bound of what the machine took, never more). Nor can it see a CPU that was idle
// and was woken late (the hypervisor runs a halted virtual CPU when it likes, too).
//
// The same recording tells who had the server's CPU while its thread was ready to run
// (switched out still runnable): the other threads that take its core for milliseconds.
// It also holds the serving thread's event-loop turns and its calls on the prober's
// connection, for where each slow round trip spent its time (round-trip-path.ts).
import { readdirSync } from 'node:fs';
import { partitionPoint } from './harness/partition-point.ts';
import { perfTracepointUnavailable, startPerfRecord, TRACE_LINE } from './perf-record.ts';
import { SERVER_LOOP_EVENTS, serverLoopOf, type ServerLoop } from './round-trip-path.ts';

/** The CPU's running time between two samples (perf's cpu-clock period), in ms. */
export const STEAL_SAMPLE_PERIOD_MS = 0.5;
/** A stretch without events this long (two periods) on a running CPU holds a stolen part. */
const MIN_GAP_MS = 2 * STEAL_SAMPLE_PERIOD_MS;

/** A stretch of time (ms on CLOCK_MONOTONIC, the clock of process.hrtime) a thread lost. */
export interface Stretch {
  readonly fromMs: number;
  readonly toMs: number;
}

const NEXT_PID = /next_pid=(\d+)/;
/** ms to two decimals, for the report. */
const round2 = (ms: number): number => Math.round(ms * 100) / 100;

/** A stretch thread `tid` lost. */
export interface ThreadStretch extends Stretch {
  readonly tid: number;
}

/**
 * The stretches the threads `tids` lost while on a CPU, from a system-wide recording of
 * cpu-clock samples and sched_switch (recorded with -k CLOCK_MONOTONIC). A stretch runs
 * from one sample period after the CPU's last event to its next one. Sorted, not merged.
 */
export function stolenStretchesOf(lines: Iterable<string>, tids: ReadonlySet<number>): ThreadStretch[] {
  const current = new Map<number, number>(); // cpu -> the thread on it
  const last = new Map<number, number>(); // cpu -> its last event (ms)
  const stretches: ThreadStretch[] = [];
  for (const line of lines) {
    const m = TRACE_LINE.exec(line);
    if (m === null) continue;
    const tid = Number(m[1]);
    const cpu = Number(m[2]);
    const ms = Number(m[3]) * 1000;
    const before = last.get(cpu);
    // Until the CPU's first switch, the thread on it is the one its first event names.
    const on = current.get(cpu) ?? tid;
    if (before !== undefined && tids.has(on) && ms - before >= MIN_GAP_MS) stretches.push({ fromMs: before + STEAL_SAMPLE_PERIOD_MS, toMs: ms, tid: on });
    last.set(cpu, ms);
    const next = m[4] === 'sched:sched_switch' ? NEXT_PID.exec(m[5] ?? '') : null;
    current.set(cpu, next === null ? tid : Number(next[1]));
  }
  return stretches.sort((a, b) => a.fromMs - b.fromMs);
}

/** The stretches with overlapping ones joined, sorted: two threads stopped at once count once. */
export function mergeStretches(stretches: readonly Stretch[]): Stretch[] {
  const sorted = [...stretches].sort((a, b) => a.fromMs - b.fromMs);
  const merged: Stretch[] = [];
  for (const s of sorted) {
    const prev = merged.at(-1);
    if (prev !== undefined && s.fromMs <= prev.toMs) merged[merged.length - 1] = { fromMs: prev.fromMs, toMs: Math.max(prev.toMs, s.toMs) };
    else merged.push(s);
  }
  return merged;
}

/** How much of [fromMs, toMs] the merged, sorted `stretches` cover. */
export function coveredMs(stretches: readonly Stretch[], fromMs: number, toMs: number): number {
  // The first stretch that may end after fromMs (ends are sorted as starts are).
  const lo = partitionPoint(stretches.length, (i) => stretches[i]!.toMs <= fromMs);
  let covered = 0;
  for (let i = lo; i < stretches.length && stretches[i]!.fromMs < toMs; i++) {
    covered += Math.min(toMs, stretches[i]!.toMs) - Math.max(fromMs, stretches[i]!.fromMs);
  }
  return covered;
}

/** Round trips sent at `sentMs` (monotonic) taking `rttMs`, each less what `stretches` (merged) took of it. */
export function lessStolen(sentMs: ArrayLike<number>, rttMs: ArrayLike<number>, stretches: readonly Stretch[]): Float64Array {
  const out = new Float64Array(rttMs.length);
  for (let i = 0; i < rttMs.length; i++) out[i] = rttMs[i]! - coveredMs(stretches, sentMs[i]!, sentMs[i]! + rttMs[i]!);
  return out;
}

/** Why `perf` cannot record every CPU's switches here, or undefined when it can. */
export function stealTraceUnavailable(): string | undefined {
  return perfTracepointUnavailable('sched:sched_switch');
}

/** Who had a thread's CPU while it was ready to run, per command name. */
export interface Preemptions {
  readonly by: string;
  readonly times: number;
  readonly totalMs: number;
  readonly longestMs: number;
}

const SWITCH = /prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/;

/** A stretch a thread was ready to run but off a CPU, and the thread that had its CPU then. */
export interface Preempted extends Stretch {
  readonly by: string;
}

/** Where a thread was off its CPU: ready to run but not on one (preempted), or waiting (asleep). */
export interface OffCpu {
  readonly ready: Preempted[];
  readonly asleep: Stretch[];
}

/** Appended to a taker's name when it is a thread of the traced thread's own process. */
export const OWN_PROCESS_MARK = ' (same process)';

/**
 * The stretches thread `tid` spent off a CPU, from each switch out to its next switch in,
 * sorted: switched out still runnable (state R) is ready, and put down to the thread that
 * took its CPU (its command name up to a `/` or `:`, so per-CPU kernel threads count as
 * one; marked with OWN_PROCESS_MARK when its id is in `ownThreads`, as threads of the same
 * name run in other processes: every Node process has its V8Workers); otherwise asleep.
 */
export function offCpuOf(lines: Iterable<string>, tid: number, ownThreads: ReadonlySet<number> = new Set()): OffCpu {
  const ready: Preempted[] = [];
  const asleep: Stretch[] = [];
  let outAt = -1;
  let taker: string | undefined; // set when preempted
  for (const line of lines) {
    const m = TRACE_LINE.exec(line);
    if (m === null || m[4] !== 'sched:sched_switch') continue;
    const sw = SWITCH.exec(m[5] ?? '');
    if (sw === null) continue;
    const ms = Number(m[3]) * 1000;
    if (Number(sw[2]) === tid) {
      outAt = ms;
      taker = sw[3]!.startsWith('R') ? sw[4]!.replace(/[/:].*/, '') + (ownThreads.has(Number(sw[5])) ? OWN_PROCESS_MARK : '') : undefined;
    } else if (Number(sw[5]) === tid && outAt >= 0) {
      if (taker === undefined) asleep.push({ fromMs: outAt, toMs: ms });
      else ready.push({ fromMs: outAt, toMs: ms, by: taker });
      outAt = -1;
    }
  }
  return { ready, asleep };
}

/** The ready stretches per thread that took the CPU: how many, how long in all and at most. Most total time first. */
export function preemptionsOf(ready: readonly Preempted[]): Preemptions[] {
  const by = new Map<string, { times: number; totalMs: number; longestMs: number }>();
  for (const r of ready) {
    const entry = by.get(r.by) ?? { times: 0, totalMs: 0, longestMs: 0 };
    entry.times++;
    entry.totalMs += r.toMs - r.fromMs;
    entry.longestMs = Math.max(entry.longestMs, r.toMs - r.fromMs);
    by.set(r.by, entry);
  }
  return [...by]
    .map(([name, e]) => ({ by: name, times: e.times, totalMs: round2(e.totalMs), longestMs: round2(e.longestMs) }))
    .sort((a, b) => b.totalMs - a.totalMs);
}

/** The serving thread's trace: off its CPU, stolen while on one, and who had its CPU while it was ready. */
export interface ServerTrace extends OffCpu {
  readonly stolen: Stretch[];
  readonly preemptedBy: Preemptions[];
}

/** What the serving thread did during one round trip, ms: on a CPU (less what was stolen), stolen, ready but off a CPU, asleep. */
export interface ThreadWindow {
  readonly runningMs: number;
  readonly stolenMs: number;
  readonly readyMs: number;
  readonly asleepMs: number;
}

/** Thread time over [fromMs, toMs], given its off-CPU stretches and the (merged) ones stolen from it. */
export function windowOf(thread: OffCpu & { readonly stolen: readonly Stretch[] }, fromMs: number, toMs: number): ThreadWindow {
  const readyMs = coveredMs(thread.ready, fromMs, toMs);
  const asleepMs = coveredMs(thread.asleep, fromMs, toMs);
  const stolenMs = coveredMs(thread.stolen, fromMs, toMs);
  return { runningMs: round2(Math.max(0, toMs - fromMs - readyMs - asleepMs - stolenMs)), stolenMs: round2(stolenMs), readyMs: round2(readyMs), asleepMs: round2(asleepMs) };
}

export interface StealTrace {
  /**
   * Stops recording; returns the stretches the serving thread and `prober` lost, merged;
   * the serving thread's trace, with who had its CPU while it was ready to run (the five
   * that took most); and its loop (round-trip-path.ts), when the kernel has the syscall
   * tracepoints.
   */
  stop(prober: number | undefined): Promise<{ stolen: Stretch[]; server: ServerTrace; loop: ServerLoop | undefined }>;
}

/** The thread ids of process `pid` now (Linux), or none when it cannot be read. */
function threadsOf(pid: number): Set<number> {
  try {
    return new Set(readdirSync(`/proc/${pid}/task`).map(Number));
  } catch {
    return new Set();
  }
}

/**
 * Starts recording every CPU's samples and switches, on CLOCK_MONOTONIC, and the loop of
 * the serving thread `server` (the process's main thread: its id is the pid), whose reply
 * to one PING is `pongBytes` long.
 */
export async function startStealTrace(server: number, pongBytes: number): Promise<StealTrace> {
  const loopEvents = perfTracepointUnavailable(SERVER_LOOP_EVENTS[0]) === undefined ? SERVER_LOOP_EVENTS.flatMap((e) => ['-e', e, '--filter', `common_pid == ${server}`]) : [];
  const recording = await startPerfRecord(['-a', '-k', 'CLOCK_MONOTONIC', '-e', `cpu-clock/period=${STEAL_SAMPLE_PERIOD_MS * 1e6}/`, '-e', 'sched:sched_switch', ...loopEvents]);
  return {
    async stop(prober: number | undefined) {
      const lines = await recording.stop('tid,cpu,time,event,trace');
      const stolen = stolenStretchesOf(lines, new Set(prober === undefined ? [server] : [server, prober]));
      const off = offCpuOf(lines, server, threadsOf(server));
      const own = { ...off, stolen: mergeStretches(stolen.filter((st) => st.tid === server)), preemptedBy: preemptionsOf(off.ready).slice(0, 5) };
      return { stolen: mergeStretches(stolen), server: own, loop: loopEvents.length === 0 ? undefined : serverLoopOf(lines, server, pongBytes) };
    },
  };
}
