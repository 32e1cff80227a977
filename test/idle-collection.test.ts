import { describe, expect, it } from 'vitest';
import { collectIdleGarbage } from '../services/store/runtime/idle-collection.ts';

describe('the idle collection', () => {
  it('frees the memory of buffers nothing holds any more in its passes', () => {
    const hadGc = typeof (globalThis as { gc?: unknown }).gc;
    (() => {
      const dead: Buffer[] = [];
      for (let i = 0; i < 64; i++) dead.push(Buffer.allocUnsafeSlow(256 * 1024));
    })();
    const before = process.memoryUsage().external;
    collectIdleGarbage();
    const freed = before - process.memoryUsage().external;
    expect(freed).toBeGreaterThanOrEqual(64 * 256 * 1024);
    // V8's gc() is taken from a context of its own: the store's globals stay as they were.
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe(hadGc);
  });
});
