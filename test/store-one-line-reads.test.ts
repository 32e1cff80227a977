// A read of one command is held to the end of the event-loop turn so that the lookups of
// every such read of the turn are prefetched together (OneLineReads): the copies must
// keep their bytes, the batch must stay within its bounds, and through a real server the
// reads of different connections must reach the engine's prefetch as one batch and each
// still get its own reply.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KvEngine } from '../services/store/engine/kv-engine.ts';
import { OneLineReads } from '../services/store/network/one-line-reads.ts';
import { PREFETCH_BATCH, type StoreEngine } from '../services/store/engine/engine-api.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

afterEach(destroyAll);

/** The keys an engine's prefetch() was given, read at the call (the buffer is reused after it). */
function keysOf(buf: Buffer, starts: Int32Array, ends: Int32Array, count: number): string[] {
  return Array.from({ length: count }, (_, i) => buf.toString('latin1', starts[i]!, ends[i]!));
}

function recordingEngine(): { engine: StoreEngine; batches: string[][] } {
  const batches: string[][] = [];
  const engine = { prefetch: (buf: Buffer, starts: Int32Array, ends: Int32Array, count: number) => void batches.push(keysOf(buf, starts, ends, count)) };
  return { engine: engine as unknown as StoreEngine, batches };
}

describe('OneLineReads', () => {
  it('copies each read (a range of the shared buffer), and prefetches every held key, at its place in the copies, in one batch', () => {
    const reads = new OneLineReads();
    const source = Buffer.from('GET alpha\nSET beta 1234\n');
    const first = reads.hold(source, 0, 10, 4, 9);
    const second = reads.hold(source, 10, 24, 14, 18); // the turn's next read, after the first in the buffer
    source.fill(0x78); // the shared read buffer, overwritten by the next read
    expect(reads.input.toString('latin1', first, first + 10)).toBe('GET alpha\n');
    expect(reads.input.toString('latin1', second, second + 14)).toBe('SET beta 1234\n');
    const { engine, batches } = recordingEngine();
    reads.prefetch(engine);
    expect(batches).toEqual([['alpha', 'beta']]);
    expect(reads.count).toBe(2);
  });

  it('a single held read has nothing to overlap with: no prefetch', () => {
    const reads = new OneLineReads();
    reads.hold(Buffer.from('GET alone\n'), 0, 10, 4, 9);
    const { engine, batches } = recordingEngine();
    reads.prefetch(engine);
    expect(batches).toEqual([]);
  });

  it('holds at most PREFETCH_BATCH reads and 64 KiB a turn; release() makes room again', () => {
    const reads = new OneLineReads();
    const line = Buffer.from('GET k\n');
    for (let i = 0; i < PREFETCH_BATCH; i++) expect(reads.hold(line, 0, line.length, 4, 5)).toBe(i * line.length);
    expect(reads.hold(line, 0, line.length, 4, 5)).toBe(-1);
    reads.release();
    expect(reads.count).toBe(0);
    const big = Buffer.alloc(40 * 1024, 0x61);
    big.write('SET k ', 0, 'latin1');
    expect(reads.hold(big, 0, big.length, 4, 5)).toBe(0);
    expect(reads.hold(big, 0, big.length, 4, 5)).toBe(-1); // 80 KiB would not fit
    const at = reads.hold(line, 0, line.length, 4, 5);
    expect(reads.input.toString('latin1', at, at + line.length)).toBe('GET k\n');
  });
});

describe('one-line reads through the server', () => {
  it('the one-line reads of several connections in a turn reach the engine as one prefetch, and each gets its own reply', async () => {
    const batches: string[][] = [];
    const prefetch = vi.spyOn(KvEngine.prototype, 'prefetch').mockImplementation(function (this: KvEngine, buf, starts, ends, count) {
      batches.push(keysOf(buf, starts, ends, count));
    });
    try {
      const store = await startTestStore();
      const clients = await Promise.all(Array.from({ length: 12 }, () => store.client()));
      await Promise.all(clients.map((c, i) => c.request(`SET key-${i} value-${i}`)));
      // Whether two clients' lines land in one poll of the event loop is the kernel's
      // timing: rounds are sent until one did. A store that ran each read at once would
      // never prefetch one-line reads at all.
      let acrossConnections: string[] | undefined;
      for (let round = 0; round < 50 && acrossConnections === undefined; round++) {
        const replies = await Promise.all(clients.map((c, i) => c.request(`GET key-${i}`)));
        expect(replies).toEqual(clients.map((_, i) => `VALUE ${b64(`value-${i}`)}`));
        acrossConnections = batches.find((keys) => keys.length >= 2 && keys.every((k) => /^key-\d+$/.test(k)) && new Set(keys).size === keys.length);
      }
      expect(acrossConnections).toBeDefined();
    } finally {
      prefetch.mockRestore();
    }
  });

  it('held reads and pipelined reads of many connections, interleaved, keep their order and their bytes', async () => {
    const store = await startTestStore();
    const clients = await Promise.all(Array.from({ length: 10 }, () => store.client()));
    // Even clients wait for each reply; odd ones pipeline bursts of SET+GET.
    const work = clients.map(async (c, i) => {
      for (let n = 0; n < 60; n++) {
        const value = `v${i}-${n}-${'y'.repeat((i * 31 + n) % 200)}`;
        if (i % 2 === 0) {
          expect(await c.request(`SET k${i}-${n} ${value}`)).toBe('OK');
          expect(await c.request(`GET k${i}-${n}`)).toBe(`VALUE ${b64(value)}`);
        } else {
          c.send(`SET k${i}-${n} ${value}\nGET k${i}-${n}\n`);
          expect(await c.lines(2)).toEqual(['OK', `VALUE ${b64(value)}`]);
        }
      }
    });
    await Promise.all(work);
  });
});
