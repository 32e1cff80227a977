import { describe, expect, it } from 'vitest';
import { pathOf, serverLoopOf } from '../bench/round-trip-path.ts';

// `perf script -F tid,cpu,time,event,trace` lines of the syscall tracepoints.
const at = (tid: number, ms: number) => `${String(tid).padStart(6)} [000] ${(ms / 1000).toFixed(6)}:`;
const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
const poll = (tid: number, ms: number, call = 'epoll_wait') => `${at(tid, ms)} syscalls:sys_exit_${call}: 0x1`;
const write = (tid: number, ms: number, fd: number, count: number) => `${at(tid, ms)} syscalls:sys_enter_write: fd: ${hex(fd)}, buf: 0x00007f0000001000, count: ${hex(count)}`;
const read = (tid: number, ms: number, fd: number) => `${at(tid, ms)} syscalls:sys_enter_read: fd: ${hex(fd)}, buf: 0x00007f0000002000, count: 0x00010000`;

/** ms to the microsecond, as perf prints them (seconds to six places). */
const us = (ms: ArrayLike<number>) => Array.from(ms, (v) => Math.round(v * 1000) / 1000);

const SERVER = 100;
const OTHER = 200;
const PONG = 5;
const PROBER_FD = 12;
const LOADER_FD = 13;

describe('round-trip path: the serving thread\'s polls and calls from a trace', () => {
  it('takes the turns and the prober connection\'s calls of the serving thread only', () => {
    const loop = serverLoopOf(
      [
        poll(SERVER, 1000),
        poll(SERVER, 1001),
        poll(OTHER, 1001.5), // another thread's loop
        read(SERVER, 1001.1, PROBER_FD),
        read(SERVER, 1001.2, LOADER_FD),
        write(SERVER, 1001.3, PROBER_FD, PONG),
        write(SERVER, 1001.4, LOADER_FD, 3 * 256),
        write(OTHER, 1001.6, PROBER_FD, PONG),
        'not an event',
      ],
      SERVER,
      PONG,
    );
    expect(us(loop.polls)).toEqual([1000, 1001]);
    expect(us(loop.proberReads)).toEqual([1001.1]);
    expect(us(loop.proberWrites)).toEqual([1001.3]);
  });

  it('tells the prober\'s connection by the writes of one PING reply, whatever else is written', () => {
    const lines = [
      write(SERVER, 1, LOADER_FD, PONG), // a loader's reply of the same size, once
      write(SERVER, 2, LOADER_FD, 3),
      write(SERVER, 3, PROBER_FD, PONG),
      write(SERVER, 4, PROBER_FD, 2 * PONG), // two replies in one write: the prober's still
      write(SERVER, 5, PROBER_FD, PONG),
    ];
    expect(us(serverLoopOf(lines, SERVER, PONG).proberWrites)).toEqual([3, 4, 5]);
  });

  it('takes the polls the prober\'s reads follow: the add-on\'s epoll_wait inside Node\'s epoll_pwait, or epoll_pwait alone', () => {
    const nested = serverLoopOf(
      [
        poll(SERVER, 1000, 'epoll_pwait'), // Node's loop: the add-on's set is ready
        poll(SERVER, 1000.01), // the add-on's poll of its client sockets
        read(SERVER, 1000.02, PROBER_FD),
        write(SERVER, 1000.1, PROBER_FD, PONG),
        poll(SERVER, 1001, 'epoll_pwait'),
        poll(SERVER, 1001.01),
        read(SERVER, 1001.02, PROBER_FD),
      ],
      SERVER,
      PONG,
    );
    expect(us(nested.polls)).toEqual([1000.01, 1001.01]);
    const plain = serverLoopOf([poll(SERVER, 1000, 'epoll_pwait'), read(SERVER, 1000.02, PROBER_FD), write(SERVER, 1000.1, PROBER_FD, PONG)], SERVER, PONG);
    expect(us(plain.polls)).toEqual([1000]);
  });

  it('finds no prober connection when nothing wrote one reply', () => {
    const loop = serverLoopOf([write(SERVER, 1, LOADER_FD, 3), read(SERVER, 2, LOADER_FD)], SERVER, PONG);
    expect(loop.proberReads).toHaveLength(0);
    expect(loop.proberWrites).toHaveLength(0);
  });
});

describe('round-trip path: where a round trip went', () => {
  const loopOf = (lines: string[]) => serverLoopOf(lines, SERVER, PONG);

  it('counts the polls after the send that no read of the prober\'s connection followed as time before the PING could be read', () => {
    const loop = loopOf([
      poll(SERVER, 999), // began before the send
      poll(SERVER, 1000.5), // after it, and did not read the prober's connection
      poll(SERVER, 1002),
      read(SERVER, 1002.1, PROBER_FD),
      write(SERVER, 1002.3, PROBER_FD, PONG),
    ]);
    const path = pathOf(loop, 1000, 2.5)!;
    expect(path.unreadMs).toBeCloseTo(0.5, 6);
    expect(path.fromMs).toBeCloseTo(1000.5, 6);
    expect(path.replyMs).toBeCloseTo(1002.3, 6);
    expect(path.backMs).toBeCloseTo(0.2, 6);
  });

  it('counts nothing unread when the poll before the reading one came before the send', () => {
    const loop = loopOf([poll(SERVER, 999), poll(SERVER, 1003), read(SERVER, 1003.1, PROBER_FD), write(SERVER, 1004, PROBER_FD, PONG)]);
    const path = pathOf(loop, 1000, 4.5)!;
    expect(path.unreadMs).toBe(0);
    expect(path.fromMs).toBe(1000);
    expect(path.backMs).toBeCloseTo(0.5, 6);
  });

  it('takes the first read after the send, which may be an earlier PING\'s: the unread time stays a lower bound', () => {
    const loop = loopOf([
      poll(SERVER, 1000.2),
      poll(SERVER, 1000.4),
      read(SERVER, 1000.5, PROBER_FD), // the earlier PING's, still waiting in the socket
      poll(SERVER, 1001),
      read(SERVER, 1001.1, PROBER_FD), // this one's
      write(SERVER, 1001.2, PROBER_FD, PONG),
    ]);
    const path = pathOf(loop, 1000, 1.5)!;
    expect(path.fromMs).toBeCloseTo(1000.2, 6);
    expect(path.unreadMs).toBeCloseTo(0.2, 6);
  });

  it('takes the last reply written before the prober read it, which may be a later PING\'s: the server\'s stretch errs long', () => {
    const loop = loopOf([
      poll(SERVER, 1000.5),
      read(SERVER, 1000.6, PROBER_FD),
      write(SERVER, 1000.7, PROBER_FD, PONG), // this PING's reply
      poll(SERVER, 1001.5),
      read(SERVER, 1001.6, PROBER_FD),
      write(SERVER, 1001.7, PROBER_FD, PONG), // the next one's, read by the prober with it
    ]);
    const path = pathOf(loop, 1000, 1.8)!;
    expect(path.replyMs).toBeCloseTo(1001.7, 6);
    expect(path.backMs).toBeCloseTo(0.1, 6);
  });

  it('has no path when the trace holds no read or no reply inside the round trip', () => {
    expect(pathOf(loopOf([poll(SERVER, 1000.5), write(SERVER, 1001, PROBER_FD, PONG)]), 1000, 2)).toBeUndefined();
    expect(pathOf(loopOf([poll(SERVER, 1000.5), read(SERVER, 1000.6, PROBER_FD), write(SERVER, 990, PROBER_FD, PONG)]), 1000, 2)).toBeUndefined();
    expect(pathOf(loopOf([read(SERVER, 1003, PROBER_FD), write(SERVER, 1003.1, PROBER_FD, PONG)]), 1000, 2)).toBeUndefined();
  });
});
