import { describe, expect, it } from 'vitest';
import { coveredMs, lessStolen, mergeStretches, offCpuOf, OWN_PROCESS_MARK, preemptionsOf, stolenStretchesOf, windowOf } from '../bench/thread-steal.ts';

// `perf script -F tid,cpu,time,event,trace` lines: the tid is the thread on the CPU at the event.
const sample = (tid: number, cpu: number, s: number) => `${String(tid).padStart(6)} [00${cpu}] ${s.toFixed(6)}: cpu-clock/period=500000/: `;
const switchTo = (tid: number, cpu: number, s: number, next: number, state = 'S', nextComm = 'b') =>
  `${String(tid).padStart(6)} [00${cpu}] ${s.toFixed(6)}:       sched:sched_switch: prev_comm=a prev_pid=${tid} prev_prio=120 prev_state=${state} ==> next_comm=${nextComm} next_pid=${next} next_prio=120`;

const SERVER = 100;
const OTHER = 200;

describe('thread steal: stretches a chosen thread lost while on a CPU', () => {
  it('finds a gap in the samples of a watched thread, from one period after its last event', () => {
    const lines = [sample(SERVER, 0, 1.0), sample(SERVER, 0, 1.0005), sample(SERVER, 0, 1.0045), sample(SERVER, 0, 1.005)];
    // 1.0005 s to 1.0045 s: 4 ms without a sample; the first 0.5 ms is the period's own.
    const [s] = stolenStretchesOf(lines, new Set([SERVER]));
    expect(s!.fromMs).toBeCloseTo(1001, 6);
    expect(s!.toMs).toBeCloseTo(1004.5, 6);
  });

  it('ignores samples that come every period, and a gap shorter than two periods', () => {
    const lines = [sample(SERVER, 0, 1.0), sample(SERVER, 0, 1.0005), sample(SERVER, 0, 1.001), sample(SERVER, 0, 1.0019)];
    expect(stolenStretchesOf(lines, new Set([SERVER]))).toEqual([]);
  });

  it('counts nothing while another thread, or no thread (idle), had the CPU', () => {
    const lines = [
      sample(SERVER, 0, 1.0),
      switchTo(SERVER, 0, 1.0001, OTHER), // the server blocks; another thread runs
      sample(OTHER, 0, 1.006), // a gap, but not the server's
      switchTo(OTHER, 0, 1.0062, 0), // idle: no samples expected
      switchTo(0, 0, 1.02, SERVER), // back, 14 ms later: the CPU was idle, not stolen
      sample(SERVER, 0, 1.0203),
    ];
    expect(stolenStretchesOf(lines, new Set([SERVER]))).toEqual([]);
    expect(stolenStretchesOf(lines, new Set([OTHER]))).toHaveLength(1);
  });

  it('follows each CPU on its own, and a thread that moves between them', () => {
    const lines = [
      sample(SERVER, 0, 1.0),
      sample(OTHER, 1, 1.0),
      switchTo(SERVER, 0, 1.0002, 0), // the server leaves CPU 0
      switchTo(OTHER, 1, 1.0003, SERVER), // and runs on CPU 1
      sample(SERVER, 1, 1.0033), // 3 ms there without an event
      sample(OTHER, 0, 1.0103), // CPU 0 had no watched thread: its gap is not counted
    ];
    const got = stolenStretchesOf(lines, new Set([SERVER]));
    expect(got).toHaveLength(1);
    expect(got[0]!.fromMs).toBeCloseTo(1000.8, 6);
    expect(got[0]!.toMs).toBeCloseTo(1003.3, 6);
  });

  it('skips lines that are not events', () => {
    expect(stolenStretchesOf(['', 'perf: some warning', sample(SERVER, 0, 1), sample(SERVER, 0, 1.01)], new Set([SERVER]))).toHaveLength(1);
  });
});

describe('thread steal: round trips less the stretches', () => {
  const stretches = mergeStretches([
    { fromMs: 10, toMs: 14 },
    { fromMs: 12, toMs: 16 }, // overlaps the first: the two threads stopped at once count once
    { fromMs: 30, toMs: 31 },
  ]);

  it('joins overlapping stretches', () => {
    expect(stretches).toEqual([
      { fromMs: 10, toMs: 16 },
      { fromMs: 30, toMs: 31 },
    ]);
  });

  it('measures how much of a window the stretches cover', () => {
    expect(coveredMs(stretches, 0, 10)).toBe(0);
    expect(coveredMs(stretches, 8, 12)).toBe(2);
    expect(coveredMs(stretches, 11, 40)).toBe(6);
    expect(coveredMs(stretches, 20, 29)).toBe(0);
    expect(coveredMs([], 0, 100)).toBe(0);
  });

  it('takes out of each round trip only the part the stretches cover', () => {
    const got = lessStolen([0, 9, 29], [2, 10, 3], stretches);
    // 0-2: untouched; 9-19: 6 ms stopped; 29-32: 1 ms stopped.
    expect([...got]).toEqual([2, 4, 2]);
  });
});

describe('thread steal: who had the server’s CPU while it was ready to run', () => {
  it('puts each stretch off the CPU after a preemption down to the thread that took it, and none after a wait', () => {
    const lines = [
      switchTo(SERVER, 0, 1.0, OTHER, 'R', 'V8Worker'), // preempted by a V8 thread
      switchTo(OTHER, 0, 1.004, SERVER),
      switchTo(SERVER, 0, 1.01, 300, 'R', 'ksoftirqd/0'),
      switchTo(300, 1, 1.0101, SERVER), // back on another CPU: still 0.1 ms
      switchTo(SERVER, 1, 1.02, 0, 'S', 'swapper/1'), // waiting for input: not a preemption
      switchTo(0, 1, 1.05, SERVER),
      switchTo(SERVER, 1, 1.06, OTHER, 'R+', 'V8Worker'),
      switchTo(OTHER, 1, 1.061, SERVER),
    ];
    const got = preemptionsOf(offCpuOf(lines, SERVER).ready);
    expect(got.map((p) => p.by)).toEqual(['V8Worker', 'ksoftirqd']);
    expect(got[0]).toEqual({ by: 'V8Worker', times: 2, totalMs: 5, longestMs: 4 });
    expect(got[1]!.times).toBe(1);
    expect(got[1]!.totalMs).toBeCloseTo(0.1, 6);
  });

  it('tells a thread of the server\'s own process from one of the same name in another', () => {
    const OWN_WORKER = 101;
    const lines = [
      switchTo(SERVER, 0, 1.0, OWN_WORKER, 'R', 'V8Worker'), // the server's own V8 thread
      switchTo(OWN_WORKER, 0, 1.004, SERVER),
      switchTo(SERVER, 0, 1.01, OTHER, 'R', 'V8Worker'), // another process's
      switchTo(OTHER, 0, 1.011, SERVER),
    ];
    const got = preemptionsOf(offCpuOf(lines, SERVER, new Set([SERVER, OWN_WORKER])).ready);
    expect(got).toEqual([
      { by: `V8Worker${OWN_PROCESS_MARK}`, times: 1, totalMs: 4, longestMs: 4 },
      { by: 'V8Worker', times: 1, totalMs: 1, longestMs: 1 },
    ]);
  });
});

describe('thread steal: what the serving thread did during one round trip', () => {
  const lines = [
    switchTo(SERVER, 0, 1.0, OTHER, 'R', 'kvload'), // preempted 1.000-1.002
    switchTo(OTHER, 0, 1.002, SERVER),
    switchTo(SERVER, 0, 1.005, 0, 'S', 'swapper/0'), // asleep 1.005-1.008
    switchTo(0, 0, 1.008, SERVER),
  ];

  it('keeps its stretches off the CPU apart: ready (preempted) and asleep (waiting)', () => {
    const off = offCpuOf(lines, SERVER);
    expect(off.ready.map((r) => [r.fromMs, r.toMs, r.by])).toEqual([[1000, 1002, 'kvload']]);
    expect(off.asleep.map((r) => [Math.round(r.fromMs), Math.round(r.toMs)])).toEqual([[1005, 1008]]);
  });

  it('splits a round trip into running, stolen, ready and asleep, which add up to it', () => {
    const w = windowOf({ ...offCpuOf(lines, SERVER), stolen: [{ fromMs: 1003, toMs: 1004 }] }, 999, 1010);
    expect(w).toEqual({ runningMs: 5, stolenMs: 1, readyMs: 2, asleepMs: 3 });
    expect(w.runningMs + w.stolenMs + w.readyMs + w.asleepMs).toBe(11);
  });
});
