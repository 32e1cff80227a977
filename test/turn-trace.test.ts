// bench/turn-trace.ts reads `perf script` output of the store's serving thread into its
// event-loop turns: how long each was by the clock, how much CPU it held, and the longest
// stretch in it with neither a sample nor a switch (the hypervisor's). Parsed here from
// lines of the two formats it asks perf for; running perf itself needs root and is the
// bench's business (growth-stall.ts --trace-turns).
import { describe, expect, it } from 'vitest';
import { turnsOf, turnStats } from '../bench/turn-trace.ts';

const exit = (t: string) => `  ${t}:  syscalls:sys_exit_epoll_pwait:      7f214c906cae epoll_pwait`;
const enter = (t: string) => `  ${t}: syscalls:sys_enter_epoll_pwait:      7f214c906cae epoll_pwait`;
const sample = (t: string, fn = '[unknown]') => `  ${t}:       cpu-clock/period=500000/:           129765d ${fn}`;
const switched = (t: string) => `  ${t}:             sched:sched_switch:  ffffffff821f8b58 __schedule`;

describe('turnsOf: perf script lines into event-loop turns', () => {
  const lines = [
    sample('0.999000'), // before the first poll returns: not a turn's
    exit('1.000000'),
    sample('1.000500', 'JS:*#find'),
    sample('1.001000', 'JS:*#find'),
    enter('1.001200'),
    // The CPU taken away for 10 ms: no sample, no switch.
    exit('2.000000'),
    sample('2.000500', 'clear_page_erms'),
    sample('2.010500', 'JS:*#newSlot'),
    enter('2.011000'),
    // Switched out for 9 ms: the kernel gave the core to another thread, not the machine's gap.
    exit('3.000000'),
    sample('3.000500'),
    switched('3.000600'),
    sample('3.009500'),
    enter('3.010000'),
    // A busy turn: 6 ms of samples, the format without functions.
    '  4.000000:  syscalls:sys_exit_epoll_pwait: ',
    ...Array.from({ length: 12 }, (_, i) => `  ${(4.0005 + i * 0.0005).toFixed(6)}:       cpu-clock/period=500000/: `),
    '  4.006200: syscalls:sys_enter_epoll_pwait: ',
    exit('5.000000'), // the recording stopped in a turn: not counted
    sample('5.000500'),
  ];
  const turns = turnsOf(lines);

  it('times each turn from a poll\'s return to the next call, with the CPU its samples hold', () => {
    expect(turns.map((t) => +t.wallMs.toFixed(3))).toEqual([1.2, 11, 10, 6.2]);
    expect(turns.map((t) => t.cpuMs)).toEqual([1, 1, 1, 6]);
  });

  it('finds the stretch with neither sample nor switch, and not the time switched out', () => {
    expect(turns.map((t) => +t.gapMs.toFixed(3))).toEqual([0.5, 10, 0.5, 0.5]);
  });

  it('names the most sampled functions of long or busy turns only', () => {
    expect(turns[0]!.top).toBeUndefined();
    expect(turns[1]!.top).toEqual(['clear_page_erms ×1', 'JS:*#newSlot ×1']);
    expect(turns[3]!.top).toBeUndefined(); // no functions in that format
  });

  it('sums them up: long turns, those the machine took part of, the longest and the busiest', () => {
    const stats = turnStats(turns);
    expect(stats).toMatchObject({ turns: 4, wallMaxMs: 11, cpuP50Ms: 1, cpuMaxMs: 6, longTurns: 3, longTurnsWithStolenGap: 1 });
    expect(stats.longest.map((t) => t.wallMs)).toEqual([11, 10, 6.2, 1.2]);
    expect(stats.busiest[0]).toMatchObject({ wallMs: 6.2, cpuMs: 6 });
  });

  it('gives zeros, not NaN, for no turns', () => {
    expect(turnStats([])).toMatchObject({ turns: 0, wallP99Ms: 0, cpuMaxMs: 0, longest: [], busiest: [] });
  });
});
