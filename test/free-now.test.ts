import { describe, expect, it } from 'vitest';
import { freeNow } from '../services/shared/free-now.ts';
import { ReplyBufferPool } from '../services/store/network/reply-buffer.ts';

describe('freeNow', () => {
  it('frees a buffer of its own at once: its views read as empty', () => {
    const own = Buffer.allocUnsafeSlow(1 << 20);
    const view = new Uint8Array(own.buffer, 100, 10);
    expect(freeNow(own)).toBe(true);
    expect(own.buffer.detached).toBe(true);
    expect(own.length).toBe(0);
    expect(view.length).toBe(0);
  });

  it("leaves alone a view of part of a buffer (Node's Buffer pool, a subarray): others share that memory", () => {
    const pooled = Buffer.from('shared with other small Buffers');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length); // a slice of Node's pool
    expect(freeNow(pooled)).toBe(false);
    expect(pooled.toString()).toBe('shared with other small Buffers');
    const whole = Buffer.allocUnsafeSlow(64).fill(7);
    expect(freeNow(whole.subarray(8))).toBe(false);
    expect(whole[0]).toBe(7);
  });
});

describe('ReplyBufferPool', () => {
  it('keeps buffers of its size for reuse and frees a large reply\'s buffer once it is given back', () => {
    const pool = new ReplyBufferPool();
    const small = pool.take(100);
    pool.give(small);
    expect(pool.take(100)).toBe(small);
    const large = pool.take(1 << 20);
    expect(large.bytes.length).toBe(1 << 20);
    pool.give(large);
    expect((large.bytes.buffer as ArrayBuffer).detached).toBe(true);
  });
});
