// The one per-turn batching mechanism the services share (log lines, client commands,
// store replies): when a batch is handed over, and which later turn gets what is added.
import { describe, expect, it } from 'vitest';
import { TurnBatcher, TurnEnd } from '../services/shared/turn-batcher.ts';

/** Resolves in the check phase after the one in which it is called from a check phase, else in this turn's. */
const immediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TurnEnd', () => {
  it('runs once at the end of the turn, however often it was requested in it, microtasks and ticks included', async () => {
    const runs: number[] = [];
    let turn = 0;
    const end = new TurnEnd(() => runs.push(turn));
    end.request();
    end.request();
    queueMicrotask(() => end.request());
    process.nextTick(() => end.request());
    await Promise.resolve();
    expect(runs).toEqual([]);
    await immediate();
    turn = 1;
    await immediate();
    expect(runs).toEqual([0]);
  });

  it('a request made while it runs is served in the next loop iteration, after immediates already queued', async () => {
    const order: string[] = [];
    let rerun = true;
    const end = new TurnEnd(() => {
      order.push('run');
      if (rerun) {
        rerun = false;
        end.request();
      }
    });
    end.request();
    setImmediate(() => order.push('queued before the run'));
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(() => setImmediate(resolve))));
    expect(order).toEqual(['run', 'queued before the run', 'run']);
  });
});

describe('TurnBatcher', () => {
  it("hands over a turn's items once, in order, at the end of the turn", async () => {
    const batches: number[][] = [];
    const batcher = new TurnBatcher<number>((items) => batches.push(items));
    const handedOverBefore: number[] = [];
    batcher.add(1);
    batcher.add(2);
    expect(batcher.size).toBe(2);
    queueMicrotask(() => {
      batcher.add(3);
      handedOverBefore.push(batches.length);
    });
    process.nextTick(() => {
      batcher.add(4);
      handedOverBefore.push(batches.length);
    });
    await immediate();
    expect(handedOverBefore).toEqual([0, 0]);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.slice(0, 2)).toEqual([1, 2]);
    expect(batches[0]!.toSorted()).toEqual([1, 2, 3, 4]);
    expect(batcher.size).toBe(0);

    batcher.add(5);
    await immediate();
    expect(batches).toEqual([batches[0], [5]]);
  });

  it('items added while a batch is handed over wait for the next turn', async () => {
    const batches: string[][] = [];
    const order: string[] = [];
    const batcher = new TurnBatcher<string>((items) => {
      batches.push(items);
      order.push(`batch ${items.join(',')}`);
      if (items[0] === 'a') batcher.add('late');
    });
    batcher.add('a');
    setImmediate(() => order.push('queued before the hand-over'));
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(() => setImmediate(resolve))));
    expect(batches).toEqual([['a'], ['late']]);
    expect(order).toEqual(['batch a', 'queued before the hand-over', 'batch late']);
  });

  it('flush hands over at once; the turn end then hands over only what came after, and never an empty batch', async () => {
    const batches: string[][] = [];
    const batcher = new TurnBatcher<string>((items) => batches.push(items));
    batcher.add('a');
    batcher.flush();
    expect(batches).toEqual([['a']]);
    batcher.flush();
    batcher.add('b');
    await immediate();
    expect(batches).toEqual([['a'], ['b']]);

    batcher.add('c');
    batcher.flush();
    await immediate();
    expect(batches).toEqual([['a'], ['b'], ['c']]);
  });

  it('discard drops what waits; later items of the turn still go at its end', async () => {
    const batches: string[][] = [];
    const batcher = new TurnBatcher<string>((items) => batches.push(items));
    batcher.add('dropped');
    batcher.discard();
    expect(batcher.size).toBe(0);
    await immediate();
    expect(batches).toEqual([]);

    batcher.add('dropped too');
    batcher.discard();
    batcher.add('kept');
    await immediate();
    expect(batches).toEqual([['kept']]);
  });
});
