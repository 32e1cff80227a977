// The CPU a server process spends per operation during a load run, read from /proc.
//
// On a shared machine the ops/s swings from one run to the next (the other tenants, the
// hypervisor taking a vCPU away), for kvstack and Redis alike. The CPU time a server
// spends per operation moves far less (docs/benchmarks.md#throughput-against-redis): it
// is what the server itself costs, whatever the machine did meanwhile. It is also the
// figure that decides the ops/s once the server, not the client, is the bottleneck
// (pipeline depth 16), so the bench reports it beside the ops/s.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ). */
let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * The user and system CPU seconds (every thread) in a /proc/<pid>/stat line. Its second
 * field, the command name, is in parentheses and may hold spaces: the fields are counted
 * from the last ')'. utime and stime are fields 14 and 15.
 */
function cpuTimesOfStat(stat: string, ticks: number): { readonly user: number; readonly system: number } | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = stat.slice(close + 2).split(' '); // fields[0] is field 3, the state
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? { user: utime / ticks, system: stime / ticks } : undefined;
}

/** The CPU seconds (user + system, every thread) in a /proc/<pid>/stat line. */
export function cpuSecondsOfStat(stat: string, ticks: number): number | undefined {
  const times = cpuTimesOfStat(stat, ticks);
  return times && times.user + times.system;
}

/** User and system CPU seconds process `pid` has used, apart; undefined where there is no /proc (not Linux) or no such process. */
export function processCpuTimes(pid: number): { readonly user: number; readonly system: number } | undefined {
  try {
    return cpuTimesOfStat(readFileSync(`/proc/${pid}/stat`, 'latin1'), clockTicks());
  } catch {
    return undefined;
  }
}

/** CPU seconds process `pid` has used; undefined where there is no /proc (not Linux) or no such process. */
export function processCpuSeconds(pid: number): number | undefined {
  const times = processCpuTimes(pid);
  return times && times.user + times.system;
}

/** One reading: performance.now() and the process's CPU seconds then. */
export interface CpuSample {
  readonly atMs: number;
  readonly cpuSeconds: number;
}

/**
 * The cores a process used on average over [fromMs, toMs] (performance.now() times), from
 * the first sample at or after fromMs to the last at or before toMs; undefined when fewer
 * than two samples fall in it.
 */
export function coresBetween(samples: readonly CpuSample[], fromMs: number, toMs: number): number | undefined {
  const inside = samples.filter((s) => s.atMs >= fromMs && s.atMs <= toMs);
  if (inside.length < 2) return undefined;
  const first = inside[0]!;
  const last = inside.at(-1)!;
  return (last.cpuSeconds - first.cpuSeconds) / ((last.atMs - first.atMs) / 1000);
}

/**
 * Samples a process's CPU seconds every `intervalMs` until stop(). /proc counts in clock
 * ticks (10 ms), so over a window of seconds the figure is good to about a percent.
 */
export class CpuTrace {
  readonly #pid: number;
  readonly #samples: CpuSample[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(pid: number, intervalMs = 50) {
    this.#pid = pid;
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), intervalMs);
  }

  /** Stops sampling (after one last sample) and returns the samples. */
  stop(): readonly CpuSample[] {
    clearInterval(this.#timer);
    this.#sample();
    return this.#samples;
  }

  #sample(): void {
    const cpuSeconds = processCpuSeconds(this.#pid);
    if (cpuSeconds !== undefined) this.#samples.push({ atMs: performance.now(), cpuSeconds });
  }
}

/**
 * The machine's steal time so far, seconds summed over its CPUs: time a virtual CPU had
 * work but the hypervisor ran something else (the 8th figure of /proc/stat's `cpu` line).
 * While it is taken away, a server on that CPU stops as if it had stalled, and a round
 * trip measured from outside includes the wait: on a shared VM this alone can exceed 10
 * ms. Undefined where there is no /proc/stat.
 */
export function machineStealSeconds(): number | undefined {
  try {
    return stealSecondsOfProcStat(readFileSync('/proc/stat', 'latin1'), clockTicks());
  } catch {
    return undefined;
  }
}

/** Starts counting the machine's steal: the call returned gives the ms of it since (undefined without /proc/stat). */
export function stealStopwatch(): () => number | undefined {
  const start = machineStealSeconds();
  return () => {
    const now = machineStealSeconds();
    return start === undefined || now === undefined ? undefined : Math.round((now - start) * 1000);
  };
}

/** The steal seconds of /proc/stat's text: its first line, `cpu  user nice system idle iowait irq softirq steal ...`. */
export function stealSecondsOfProcStat(text: string, ticks: number): number | undefined {
  const fields = text.split('\n', 1)[0]!.trim().split(/\s+/);
  if (fields[0] !== 'cpu') return undefined;
  const steal = Number(fields[8]);
  return fields[8] !== undefined && Number.isFinite(steal) ? steal / ticks : undefined;
}
