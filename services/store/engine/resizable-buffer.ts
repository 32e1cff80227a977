// Resizable ArrayBuffers for the engine's tables and the arena's owner arrays.

/**
 * The options `new ArrayBuffer` reads, one object reused: its one field holds a double from
 * the start. V8 gives every `{ maxByteLength }` literal one shape, and the shape's field
 * starts as a small integer; an engine whose arrays may grow past 2 GiB (its bound on keys
 * from a large MAX_MEMORY_BYTES) stores a double there, which changed the shape, and V8
 * threw away the optimised code built on it: the engine's insert path, at the real
 * engine's creation right after the warm-up, so that the first clients' writes ran it
 * unoptimised and V8's threads compiled it again meanwhile.
 */
const OPTIONS = { maxByteLength: 0.5 };

/** An ArrayBuffer of `bytes` that can be resized up to `maxBytes`. */
export function resizableBuffer(bytes: number, maxBytes: number): ArrayBuffer {
  OPTIONS.maxByteLength = maxBytes;
  return new ArrayBuffer(bytes, OPTIONS);
}
