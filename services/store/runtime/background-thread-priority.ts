// Lowers the CPU priority of V8's background threads, so the thread that serves clients
// wins a contended core.
//
// V8 runs concurrent marking, sweeping and optimising compiles on a pool of platform
// threads (four, named "V8Worker"). On a machine with few cores, busy with the store and
// its clients, those threads take turns on the cores with the serving thread, and the
// scheduler may put the serving thread behind them for milliseconds at a time: with 8,000,000
// keys loaded over two connections on 2 cores, the longest gap between two event-loop
// turns was 6-12 ms in four runs, 4.7-6.2 ms with the threads at nice 19
// (bench/growth-stall.ts tells the same from outside). The work is not dropped: the threads
// still run whenever a core is free, and V8 finishes on the serving thread whatever marking
// they have not done. Throughput at pipeline depth 1 and 16 was the same either way.
//
// Linux only: a thread is a task of its own there, named in /proc/self/task/<tid>/comm,
// and setpriority() takes its id. Elsewhere, or if Node names its threads otherwise,
// nothing changes and the count returned is 0 (the store logs it in its ready line).
import { fs } from '../../shared/builtins.ts';
import { setPriority } from 'node:os';

/** The name Node gives V8's platform worker threads. */
const V8_WORKER_THREAD = 'V8Worker';
/** The lowest priority a thread can have short of SCHED_IDLE (which could starve it for good). */
export const BACKGROUND_NICE = 19;

/** Sets every V8 platform worker thread of this process to `nice`; returns how many it set. */
export function lowerV8WorkerPriority(nice: number = BACKGROUND_NICE): number {
  let lowered = 0;
  let tids: string[];
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return 0; // not Linux
  }
  for (const tid of tids) {
    try {
      if (fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() !== V8_WORKER_THREAD) continue;
      setPriority(Number(tid), nice);
      lowered++;
    } catch {
      // The thread ended between the listing and the call: nothing to lower.
    }
  }
  return lowered;
}
