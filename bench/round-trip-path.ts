// Where a slow PING's time went on its way: before the server could read it, in the
// server until it wrote the reply, and on the way back. From the steal trace's recording
// (thread-steal.ts), which also records the serving thread's returns from epoll (each poll
// of its client sockets) and its read and write calls with their descriptors.
//
// Why: a round trip whose serving thread was on a CPU all along was not necessarily slowed
// by the server. Under a load the thread runs short turns back to back for the loaders;
// a PING whose packet is not yet in its socket (the sender's kernel has not delivered it:
// softirq work put off to ksoftirqd, a virtual CPU woken late) waits through them, and so
// does one a long turn holds up. The polls tell the two apart: the server reads the
// prober's connection after a poll that reports it readable, so a poll after the PING was
// sent that was not followed by a read of that connection came before the PING could be
// read.
//
// The figures lean the server's way, never away from it: `unreadMs` is a lower bound of
// the PING's time before it could be read (the poll before the one that the first read of
// the prober's connection after the send followed), and the reply is taken at the last
// write to that connection before the prober read the reply (the one that answered it, or
// a later PING's), so the stretch between holds at least the server's own part.
import { partitionPoint } from './harness/partition-point.ts';
import { TRACE_LINE } from './perf-record.ts';

/** The serving thread's polls of its client sockets and its calls on the prober's connection (ms on CLOCK_MONOTONIC, sorted). */
export interface ServerLoop {
  /** Its returns from the epoll call that reports its client sockets (each one every ready socket, with the bench's few connections). */
  readonly polls: Float64Array;
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
 * The loop of thread `tid` from `perf script -F tid,cpu,time,event,trace` lines (in time
 * order, as perf script gives them). The prober's connection is the descriptor it most
 * often wrote `pongBytes` to (one PING's reply: a loader's replies come in other sizes);
 * none found leaves its calls empty. The polls are the returns of the epoll call after
 * which it reads the prober's connection: Redis waits in epoll_wait; Node's loop waits in
 * epoll_pwait, but with the store's socket add-on that reports only the add-on's own epoll
 * set, which the add-on then polls with epoll_wait: a return of the outer call says
 * nothing of which sockets are ready.
 */
export function serverLoopOf(lines: Iterable<string>, tid: number, pongBytes: number): ServerLoop {
  const events: { ms: number; kind: 'epoll_wait' | 'epoll_pwait' | 'read' | 'write'; fd: number }[] = [];
  const pongWrites = new Map<number, number>(); // fd -> writes of one reply
  for (const line of lines) {
    const m = TRACE_LINE.exec(line);
    if (m === null || Number(m[1]) !== tid) continue;
    const ms = Number(m[3]) * 1000;
    const event = m[4];
    if (event === 'syscalls:sys_exit_epoll_wait') events.push({ ms, kind: 'epoll_wait', fd: -1 });
    else if (event === 'syscalls:sys_exit_epoll_pwait') events.push({ ms, kind: 'epoll_pwait', fd: -1 });
    else if (event === 'syscalls:sys_enter_read' || event === 'syscalls:sys_enter_write') {
      const fd = Number(FD.exec(m[5] ?? '')?.[1] ?? -1);
      if (fd < 0) continue;
      const write = event === 'syscalls:sys_enter_write';
      events.push({ ms, kind: write ? 'write' : 'read', fd });
      if (write && Number(COUNT.exec(m[5] ?? '')?.[1] ?? -1) === pongBytes) pongWrites.set(fd, (pongWrites.get(fd) ?? 0) + 1);
    }
  }
  let prober = -1;
  let most = 0;
  for (const [fd, n] of pongWrites) if (n > most) [prober, most] = [fd, n];
  // Which epoll call the prober's reads follow.
  const before = { epoll_wait: 0, epoll_pwait: 0 };
  let lastPoll: 'epoll_wait' | 'epoll_pwait' | undefined;
  for (const e of events) {
    if (e.kind === 'epoll_wait' || e.kind === 'epoll_pwait') lastPoll = e.kind;
    else if (e.kind === 'read' && e.fd === prober && lastPoll !== undefined) before[lastPoll]++;
  }
  const poll = before.epoll_wait >= before.epoll_pwait ? 'epoll_wait' : 'epoll_pwait';
  const times = (keep: (e: (typeof events)[number]) => boolean): Float64Array => Float64Array.from(events.filter(keep), (e) => e.ms).sort();
  return {
    polls: times((e) => e.kind === poll),
    proberReads: times((e) => e.kind === 'read' && e.fd === prober),
    proberWrites: times((e) => e.kind === 'write' && e.fd === prober),
  };
}

/** Where a round trip's time went, ms. */
export interface RoundTripPath {
  /** From the send to the poll before the one the first read of the prober's connection followed: the PING could not be read yet (at least this long). */
  readonly unreadMs: number;
  /** When that was, and when the reply was written (monotonic): the stretch the server had the PING, its own work in it (and perhaps more). */
  readonly fromMs: number;
  readonly replyMs: number;
  /** From the reply's write to the prober's read of it: the way back and the prober's wake-up. */
  readonly backMs: number;
}

/** Index of the last element of sorted `a` at most `ms` (below it when `strictly`), -1 if none. */
function lastAtMost(a: Float64Array, ms: number, strictly = false): number {
  return partitionPoint(a.length, strictly ? (i) => a[i]! < ms : (i) => a[i]! <= ms) - 1;
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
  // The poll that read followed; the one before it, if it came after the send, returned
  // without the prober's connection readable.
  const readingPoll = lastAtMost(loop.polls, readMs);
  const fromMs = Math.max(sentMs, readingPoll > 0 ? loop.polls[readingPoll - 1]! : sentMs);
  return { unreadMs: round2(fromMs - sentMs), fromMs, replyMs, backMs: round2(receivedMs - replyMs) };
}
