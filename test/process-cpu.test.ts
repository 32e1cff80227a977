import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { coresBetween, cpuSecondsOfStat, CpuTrace, machineStealSeconds, processCpuSeconds, stealSecondsOfProcStat, stealStopwatch } from '../bench/harness/process-cpu.ts';

describe('the bench reads a server process CPU time', () => {
  it('reads utime + stime of a /proc/<pid>/stat line, a command name with spaces and parentheses included', () => {
    // Fields 14 and 15 (utime 250, stime 50 ticks) after a name that could fool a split on spaces.
    const stat = '4242 (my (odd) server) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 12345 1000000 500';
    expect(cpuSecondsOfStat(stat, 100)).toBe(3);
    expect(cpuSecondsOfStat(stat, 1000)).toBe(0.3);
    expect(cpuSecondsOfStat('no closing parenthesis', 100)).toBeUndefined();
    expect(cpuSecondsOfStat('1 (x) S 1 2', 100)).toBeUndefined();
  });

  it('averages the cores used between the first and last sample inside the window', () => {
    const samples = [
      { atMs: 0, cpuSeconds: 10 },
      { atMs: 1000, cpuSeconds: 10.5 },
      { atMs: 2000, cpuSeconds: 11.5 },
      { atMs: 3000, cpuSeconds: 12.5 },
    ];
    expect(coresBetween(samples, 1000, 3000)).toBe(1);
    expect(coresBetween(samples, 0, 1000)).toBe(0.5);
    expect(coresBetween(samples, 1500, 2500)).toBeUndefined(); // one sample inside
  });

  it.runIf(existsSync('/proc/self/stat'))('measures a busy child at about one core and an idle one at about none', async () => {
    expect(processCpuSeconds(process.pid)).toBeGreaterThan(0);
    const busy = spawn(process.execPath, ['-e', 'const end = Date.now() + 1500; while (Date.now() < end);']);
    const idle = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 1500)']);
    const busyTrace = new CpuTrace(busy.pid!, 20);
    const idleTrace = new CpuTrace(idle.pid!, 20);
    const started = performance.now();
    await Promise.all([once(busy, 'exit'), once(idle, 'exit')]);
    const busySamples = busyTrace.stop();
    const idleSamples = idleTrace.stop();
    // From 300 ms in (the child has started) to the last sample the process was alive for.
    const busyCores = coresBetween(busySamples, started + 300, busySamples.at(-1)!.atMs)!;
    const idleCores = coresBetween(idleSamples, started + 300, idleSamples.at(-1)!.atMs)!;
    expect(busyCores).toBeGreaterThan(0.5); // a spinning thread, on a shared 2-core machine
    expect(busyCores).toBeLessThan(1.3);
    expect(idleCores).toBeLessThan(0.2);
    expect(processCpuSeconds(busy.pid!)).toBeUndefined(); // gone
  });

  it("reads the steal time from /proc/stat's first line", () => {
    const text = 'cpu  508226 13850 209639 1018315 5142 0 72374 46344 0 0\ncpu0 245170 7674 102535 527367 982 0 35437 22958 0 0\n';
    expect(stealSecondsOfProcStat(text, 100)).toBe(463.44);
    expect(stealSecondsOfProcStat('cpu0 1 2 3 4 5 6 7 8\n', 100)).toBeUndefined(); // not the machine's line
    expect(stealSecondsOfProcStat('cpu  1 2 3 4\n', 100)).toBeUndefined(); // a kernel without the field
  });

  it.runIf(existsSync('/proc/stat'))("reads this machine's steal time, which never goes back", () => {
    const first = machineStealSeconds()!;
    expect(first).toBeGreaterThanOrEqual(0);
    expect(machineStealSeconds()!).toBeGreaterThanOrEqual(first);
    const since = stealStopwatch();
    const ms = since()!;
    expect(Number.isInteger(ms) && ms >= 0).toBe(true);
  });
});
