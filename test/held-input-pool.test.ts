import { describe, expect, it } from 'vitest';
import { HeldInputPool } from '../services/store/network/held-input-pool.ts';

describe('HeldInputPool', () => {
  it('lends 64 KiB buffers for the rest of a read and lends a given-back one again', () => {
    const pool = new HeldInputPool();
    const a = pool.take(100);
    expect(a.length).toBe(64 * 1024);
    expect(pool.take(64 * 1024)).not.toBe(a);
    pool.give(a);
    expect(pool.freeCount).toBe(1);
    expect(pool.take(5000)).toBe(a);
    expect(pool.freeCount).toBe(0);
  });

  it('gives a larger buffer of its own for more, and keeps at most 32 free: the rest are freed when given back', () => {
    const pool = new HeldInputPool();
    const big = pool.take(64 * 1024 + 1);
    expect(big.length).toBe(64 * 1024 + 1);
    pool.give(big);
    expect(pool.freeCount).toBe(0);
    expect((big.buffer as ArrayBuffer).detached).toBe(true); // freed now, not at a collection
    const lent = Array.from({ length: 40 }, () => pool.take(10));
    for (const b of lent) pool.give(b);
    expect(pool.freeCount).toBe(32);
    expect(lent.filter((b) => (b.buffer as ArrayBuffer).detached)).toHaveLength(8);
  });
});
