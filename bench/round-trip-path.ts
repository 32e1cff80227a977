// Where a slow PING's time went on its way: before the server could read it, in the
// server until it wrote the reply, and on the way back. From the steal trace's recording
// (thread-steal.ts), which also records the serving thread's returns from epoll (the start
// of each event-loop turn) and its read and write calls with their descriptors.
//
// Why: a round trip whose serving thread was on a CPU all along was not necessarily slowed
// by the server. Under a load the thread runs short turns back to back for the loaders;
// a PING whose packet is not yet in its socket (the sender's kernel has not delivered it:
// softirq work put off to ksoftirqd, a virtual CPU woken late) waits through them, and so
// does one a long turn holds up. The turns tell the two apart: a turn reads the prober's
// connection when epoll reports it readable, so a turn that began after the PING was sent
// and did not read that connection began before the PING could be read.
//
// The figures lean the server's way, never away from it: `unreadMs` is a lower bound of
// the PING's time before it could be read (the turn before the first read of the prober's
// connection after the send), and the reply is taken at the last write to that connection
// before the prober read the reply (the one that answered it, or a later PING's), so the
// stretch between holds at least the server's own part.
import { TRACE_LINE } from './perf-record.ts';

/** The serving thread's event-loop turns and its calls on the prober's connection (ms on CLOCK_MONOTONIC, sorted). */
export interface ServerLoop {
  /** Its returns from epoll_wait / epoll_pwait: a turn begins at each. */
  readonly turnStarts: Float64Array;
  /** Its reads of the prober's connection (a read that found nothing included). */
  readonly proberReads: Float64Array;
  /** Its writes to the prober's connection. */
  readonly proberWrites: Float64Array;
}

/** The tracepoints the loop is read from (each filtered to the serving thread when recorded). */
export const SERVER_LOOP_EVENTS = ['syscalls:sys_exit_epoll_wait', 'syscalls:sys_exit_epoll_pwait', 'syscalls:sys_enter_read', 'syscalls:sys_enter_write'] as const;

const FD = /\bfd: (0x[0-9a-f]+)/;
const COUNT = /\bcount: (0x[0-9a-f]+)/;

/**
 * The loop of thread `tid` from `perf script -F tid,cpu,time,event,trace` lines. The
 * prober's connection is the descriptor it most often wrote `pongBytes` to (one PING's
 * reply: a loader's replies come in other sizes); none found leaves its calls empty.
 */
export function serverLoopOf(lines: Iterable<string>, tid: number, pongBytes: number): ServerLoop {
  const turnStarts: number[] = [];
  const calls: { ms: number; write: boolean; fd: number }[] = [];
  const pongWrites = new Map<number, number>(); // fd -> writes of one reply
  for (const line of lines) {
    const m = TRACE_LINE.exec(line);
    if (m === null || Number(m[1]) !== tid) continue;
    const ms = Number(m[3]) * 1000;
    const event = m[4];
    if (event === 'syscalls:sys_exit_epoll_wait' || event === 'syscalls:sys_exit_epoll_pwait') {
      turnStarts.push(ms);
    } else if (event === 'syscalls:sys_enter_read' || event === 'syscalls:sys_enter_write') {
      const fd = FD.exec(m[5] ?? '');
      if (fd === null) continue;
      const write = event === 'syscalls:sys_enter_write';
      calls.push({ ms, write, fd: Number(fd[1]) });
      if (write && Number(COUNT.exec(m[5] ?? '')?.[1] ?? -1) === pongBytes) pongWrites.set(Number(fd[1]), (pongWrites.get(Number(fd[1])) ?? 0) + 1);
    }
  }
  let prober = -1;
  let most = 0;
  for (const [fd, n] of pongWrites) if (n > most) [prober, most] = [fd, n];
  const sorted = (ms: number[]): Float64Array => Float64Array.from(ms).sort();
  return {
    turnStarts: sorted(turnStarts),
    proberReads: sorted(calls.filter((c) => !c.write && c.fd === prober).map((c) => c.ms)),
    proberWrites: sorted(calls.filter((c) => c.write && c.fd === prober).map((c) => c.ms)),
  };
}

/** Where a round trip's time went, ms. */
export interface RoundTripPath {
  /** From the send to the start of the turn before the first read of the prober's connection: the PING could not be read yet (at least this long). */
  readonly unreadMs: number;
  /** When that was, and when the reply was written (monotonic): the stretch the server had the PING, its own work in it (and perhaps more). */
  readonly fromMs: number;
  readonly replyMs: number;
  /** From the reply's write to the prober's read of it: the way back and the prober's wake-up. */
  readonly backMs: number;
}

/** Index of the last element of sorted `a` at most `ms` (below it when `strictly`), -1 if none. */
function lastAtMost(a: Float64Array, ms: number, strictly = false): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strictly ? a[mid]! < ms : a[mid]! <= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

const round2 = (ms: number): number => Math.round(ms * 100) / 100;

/**
 * The path of the round trip sent at `sentMs` taking `rttMs` through the server's `loop`;
 * undefined when the loop holds no read and write of the prober's connection inside it.
 */
export function pathOf(loop: ServerLoop, sentMs: number, rttMs: number): RoundTripPath | undefined {
  const receivedMs = sentMs + rttMs;
  const readMs = loop.proberReads[lastAtMost(loop.proberReads, sentMs, true) + 1];
  const replyMs = loop.proberWrites[lastAtMost(loop.proberWrites, receivedMs)];
  if (readMs === undefined || replyMs === undefined || readMs > receivedMs || replyMs < readMs) return undefined;
  // The turn that made that read began at or before it; the one before that, if it began
  // after the send, returned from epoll without the prober's connection readable.
  const readingTurn = lastAtMost(loop.turnStarts, readMs);
  const fromMs = Math.max(sentMs, readingTurn > 0 ? loop.turnStarts[readingTurn - 1]! : sentMs);
  return { unreadMs: round2(fromMs - sentMs), fromMs, replyMs, backMs: round2(receivedMs - replyMs) };
}
