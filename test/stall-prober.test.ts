// bench/growth-stall.ts's prober: on its own thread, a PING every millisecond (RESP's with
// CRLF for Redis), each reply's round trip recorded by phase with when its PING was sent,
// on the clock a `perf` trace of the machine stamps its events with (CLOCK_MONOTONIC).
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { longestIndexes, longestRoundTrips, StallProber, worstAfter } from '../bench/stall-prober.ts';
import { PONG_REPLY } from '../services/protocol/replies.ts';

const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** A stand-in server that answers each PING line and counts them; `reached(n)` resolves once it has had n. */
async function pingServer(redis: boolean) {
  const lines: string[] = [];
  const waiting: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((s: Socket) => {
    // The prober closes its end when it stops: a PONG written after that meets a reset.
    s.on('error', () => {});
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        lines.push(buf.slice(0, i + 1));
        buf = buf.slice(i + 1);
        s.write(redis ? '+PONG\r\n' : PONG_REPLY);
      }
      for (const w of waiting.filter((w) => lines.length >= w.n)) w.resolve();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    lines,
    port: (server.address() as { port: number }).port,
    reached: (n: number) => new Promise<void>((resolve) => (lines.length >= n ? resolve() : waiting.push({ n, resolve }))),
  };
}

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe('the stall prober', () => {
  it.each([
    ['the line protocol', false, 'PING\n'],
    ['Redis', true, 'PING\r\n'],
  ])('%s: PINGs every millisecond and reports each phase its round trips, with when each was sent', async (_, redis, ping) => {
    const stand = await pingServer(redis);
    servers.push(stand.server);
    const before = monotonicMs();
    const prober = await StallProber.start({ port: stand.port, redis, warmupPings: 20 });
    expect(stand.lines.length).toBeGreaterThanOrEqual(20); // ready only after its warm-up round trips
    prober.phase('first');
    await stand.reached(stand.lines.length + 30);
    prober.phase('second');
    await stand.reached(stand.lines.length + 30);
    const report = await prober.stop();
    const after = monotonicMs();

    expect(new Set(stand.lines)).toEqual(new Set([ping]));
    expect(Object.keys(report.phases)).toEqual(['first', 'second']); // the warm-up's left out
    let recorded = 20;
    for (const { sent, rtts } of Object.values(report.phases)) {
      expect(sent.length).toBeGreaterThan(0);
      expect(rtts.length).toBe(sent.length);
      expect(sent).toEqual([...sent].sort((a, b) => a - b));
      for (let i = 0; i < sent.length; i++) {
        expect(rtts[i]).toBeGreaterThan(0);
        // On this process's CLOCK_MONOTONIC (hrtime), within the prober's life.
        expect(sent[i]).toBeGreaterThan(before);
        expect(sent[i]! + rtts[i]!).toBeLessThan(after);
      }
      recorded += sent.length;
    }
    // Each reply matched to its own PING: never more round trips than PINGs answered.
    expect(recorded).toBeLessThanOrEqual(stand.lines.length);
    expect(report.proberNice).toBe('unchanged');
    if (process.platform === 'linux') expect(report.proberTid).toBeGreaterThan(0);
  });

  it('start() fails when nothing listens, with the connection error', async () => {
    const stand = await pingServer(false);
    stand.server.close();
    await once(stand.server, 'close');
    await expect(StallProber.start({ port: stand.port, redis: false })).rejects.toThrow(/prober: Error: connect ECONNREFUSED/);
  });
});

describe('where in a phase its longest round trips fell', () => {
  // Sent every millisecond from 5000.0; the 3rd, 1501st and 2000th were slow.
  const sent = Array.from({ length: 2000 }, (_, i) => 5000 + i);
  const rtts = sent.map((_, i) => (i === 2 ? 9.5 : i === 1500 ? 4.25 : i === 1999 ? 4.25 : 0.3));

  it('longestRoundTrips: the n longest, longest first and the earlier of equals first, each with seconds from the first PING', () => {
    expect(longestRoundTrips({ sent, rtts }, 3)).toEqual([
      { ms: 9.5, atS: 0.002 },
      { ms: 4.25, atS: 1.5 },
      { ms: 4.25, atS: 1.999 },
    ]);
    expect(longestRoundTrips({ sent: [], rtts: [] }, 3)).toEqual([]);
  });

  it('longestIndexes: the indexes of the n largest, largest first, equals in their order', () => {
    expect(longestIndexes([1, 5, 3, 5, 2], 3)).toEqual([1, 3, 2]);
    expect(longestIndexes(Float64Array.of(0.5, 0.25), 5)).toEqual([0, 1]);
  });

  it('worstAfter: the worst of those sent at least that long after the first, undefined when none was', () => {
    expect(worstAfter({ sent, rtts }, 1000)).toBe(4.25);
    expect(worstAfter({ sent, rtts }, 0)).toBe(9.5);
    expect(worstAfter({ sent, rtts }, 2000)).toBeUndefined();
  });
});
