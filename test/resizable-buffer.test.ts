// The engine's resizable buffers (services/store/engine/resizable-buffer.ts): one reused options
// object for `new ArrayBuffer`, so its field's kind never changes under V8's optimised code.
import { describe, expect, it } from 'vitest';
import { resizableBuffer } from '../services/store/engine/resizable-buffer.ts';

describe('resizableBuffer', () => {
  it('makes a buffer of the size asked that can be resized up to its bound, small or past 2 GiB', () => {
    const small = resizableBuffer(16, 64);
    expect([small.byteLength, small.maxByteLength, small.resizable]).toEqual([16, 64, true]);
    small.resize(64);
    expect(small.byteLength).toBe(64);
    expect(() => small.resize(65)).toThrow(RangeError);
    // An engine's slot arrays may reserve more than 2 GiB of address space (a bound that is not a small integer).
    const large = resizableBuffer(0, 2 ** 32);
    expect([large.byteLength, large.maxByteLength]).toEqual([0, 2 ** 32]);
    // Each buffer keeps its own bound: the options object is reused, not the buffer.
    expect(resizableBuffer(0, 8).maxByteLength).toBe(8);
    expect(small.maxByteLength).toBe(64);
  });
});
