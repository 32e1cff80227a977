// The serving thread's event-loop turns, seen from outside with `perf` (Linux; root, or a
// perf_event_paranoid that allows tracepoints): a turn is the time from one epoll_pwait's
// return to the next call (libuv's poll), and the thread's CPU is sampled every 0.5 ms of
// its own running time. A PING waits out at most about two turns, so their length is the
// server's share of a worst round trip.
//
// Why samples: on a virtual machine the hypervisor takes a CPU away whenever it likes
// (steal), and the guest's clock counts that time as the thread running. While the CPU is
// taken, the thread is neither sampled nor switched out, so a stretch of a turn with
// neither is time the machine took, not work the server did; the samples in a turn are
// its CPU. growth-stall.ts --trace-turns reports these figures beside its worst PING.
import { perfTracepointUnavailable, startPerfRecord } from './perf-record.ts';

/** The CPU time between two samples of the thread (perf's cpu-clock period, in ms). */
export const SAMPLE_PERIOD_MS = 0.5;
/** A turn this long by the clock counts as long. */
const LONG_TURN_MS = 5;
/** A stretch this long without a sample or a switch, in a long turn, is the machine's. */
const STOLEN_GAP_MS = 3;

export interface TurnFigures {
  readonly wallMs: number;
  /** Samples in the turn times the sample period. */
  readonly cpuMs: number;
  /** The longest stretch the thread was neither sampled nor switched out. */
  readonly gapMs: number;
  /** A long or busy turn's most sampled functions, `name ×samples` (JavaScript's are named only in a store run with --perf-basic-prof). */
  readonly top?: readonly string[];
}

export interface TurnStats {
  readonly turns: number;
  readonly wallP99Ms: number;
  readonly wallMaxMs: number;
  readonly cpuP50Ms: number;
  readonly cpuP99Ms: number;
  readonly cpuMaxMs: number;
  /** Turns over 5 ms by the clock. */
  readonly longTurns: number;
  /** Of them, those with a gap of 3 ms or more: the hypervisor had the CPU. */
  readonly longTurnsWithStolenGap: number;
  /** The five longest turns by the clock. */
  readonly longest: readonly TurnFigures[];
  /** The five turns with the most CPU. */
  readonly busiest: readonly TurnFigures[];
}

/** `time: event:` then, with -F ip,sym, the address and its symbol. */
const LINE = /^\s*(\d+\.\d+):\s+(\S+?):(?:\s+[0-9a-f]+\s+(.*?))?\s*$/;
/** A turn this long by the clock, or with this much CPU, keeps its top functions. */
const NAMED_TURN_MS = 2;

/**
 * The turns of `perf script -F time,event,ip,sym` output (or `-F time,event`, without the
 * functions) for one thread recorded with cpu-clock samples, sys_enter/sys_exit_epoll_pwait
 * and sched_switch. Events outside a turn (before the first poll returns, after the last)
 * are ignored.
 */
export function turnsOf(lines: Iterable<string>): TurnFigures[] {
  const turns: TurnFigures[] = [];
  let start = -1; // the turn's start (s), or -1 between a poll's call and its return
  let samples = 0;
  let gap = 0;
  let mark = -1; // the last sample (or the start), -1 after a switch until the next sample
  const functions = new Map<string, number>();
  for (const line of lines) {
    const m = LINE.exec(line);
    if (m === null) continue;
    const t = Number(m[1]);
    const event = m[2]!;
    if (event.endsWith('sys_exit_epoll_pwait')) {
      start = mark = t;
      samples = 0;
      gap = 0;
      functions.clear();
    } else if (start < 0) {
      continue;
    } else if (event.endsWith('sys_enter_epoll_pwait')) {
      if (mark >= 0) gap = Math.max(gap, t - mark);
      const wallMs = (t - start) * 1000;
      const cpuMs = samples * SAMPLE_PERIOD_MS;
      const named = (wallMs > NAMED_TURN_MS || cpuMs > NAMED_TURN_MS) && functions.size > 0;
      turns.push({ wallMs, cpuMs, gapMs: gap * 1000, ...(named ? { top: topOf(functions) } : {}) });
      start = -1;
    } else if (event.startsWith('cpu-clock')) {
      samples++;
      if (mark >= 0) gap = Math.max(gap, t - mark);
      mark = t;
      const fn = m[3];
      if (fn !== undefined && fn !== '') functions.set(fn, (functions.get(fn) ?? 0) + 1);
    } else if (event === 'sched:sched_switch') {
      mark = -1; // off the CPU by the kernel's choice: not the machine's, until the next sample
    }
  }
  return turns;
}

/** The three most sampled functions, `name ×samples`. */
function topOf(functions: Map<string, number>): string[] {
  return [...functions]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([fn, n]) => `${fn.length > 90 ? `${fn.slice(0, 90)}…` : fn} ×${n}`);
}

/** Quantile q of ascending `sorted` (nearest rank). */
function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
}

const round = (ms: number): number => Math.round(ms * 100) / 100;

function firstFive(turns: readonly TurnFigures[], order: (a: TurnFigures, b: TurnFigures) => number): TurnFigures[] {
  return [...turns]
    .sort(order)
    .slice(0, 5)
    .map((t) => ({ ...t, wallMs: round(t.wallMs), gapMs: round(t.gapMs) }));
}

export function turnStats(turns: readonly TurnFigures[]): TurnStats {
  const wall = turns.map((t) => t.wallMs).sort((a, b) => a - b);
  const cpu = turns.map((t) => t.cpuMs).sort((a, b) => a - b);
  const long = turns.filter((t) => t.wallMs > LONG_TURN_MS);
  return {
    turns: turns.length,
    wallP99Ms: round(quantile(wall, 0.99)),
    wallMaxMs: round(wall.at(-1) ?? 0),
    cpuP50Ms: quantile(cpu, 0.5),
    cpuP99Ms: quantile(cpu, 0.99),
    cpuMaxMs: cpu.at(-1) ?? 0,
    longTurns: long.length,
    longTurnsWithStolenGap: long.filter((t) => t.gapMs >= STOLEN_GAP_MS).length,
    longest: firstFive(turns, (a, b) => b.wallMs - a.wallMs),
    busiest: firstFive(turns, (a, b) => b.cpuMs - a.cpuMs),
  };
}

/** Why `perf` cannot trace here, or undefined when it can. */
export function turnTraceUnavailable(): string | undefined {
  return perfTracepointUnavailable('syscalls:sys_enter_epoll_pwait');
}

export interface TurnTrace {
  /** Stops recording and returns the turns' figures. */
  stop(): Promise<TurnStats>;
}

/** Starts recording the turns of thread `tid` (a process's main thread: its pid). */
export async function startTurnTrace(tid: number): Promise<TurnTrace> {
  const events = [`cpu-clock/period=${SAMPLE_PERIOD_MS * 1e6}/`, 'syscalls:sys_enter_epoll_pwait,syscalls:sys_exit_epoll_pwait,sched:sched_switch'];
  const recording = await startPerfRecord(['-e', events[0]!, '-e', events[1]!, '-t', String(tid)]);
  return {
    async stop(): Promise<TurnStats> {
      const turns = turnsOf(await recording.stop('time,event,ip,sym'));
      if (turns.length === 0) throw new Error('perf recorded no epoll_pwait of the thread: not a libuv event loop, or the events were not seen');
      return turnStats(turns);
    },
  };
}
