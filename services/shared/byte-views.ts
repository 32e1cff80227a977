/**
 * A DataView of `bytes`: the one made for the previous call when that was for the same
 * buffer, else a new one (which is then kept).
 *
 * Why: the store's command path reads keys and lines four bytes at a time through a
 * DataView (one 32-bit load instead of four byte loads, each checked against the
 * buffer's length). Its readers (the framer, the key scanner, the parser, the engine) all
 * read the same buffer in turn, a read's lines arrive in the shared read buffer, so one
 * view made once serves all of them; a read that comes in a buffer of its own (a line
 * joined from two reads, or Node's own read path) costs one view (~0.1 µs), not one per
 * reader. One per process: a view of the last buffer any of them asked for.
 */
let lastBytes: Uint8Array | null = null;
let lastView: DataView = new DataView(new ArrayBuffer(0));

export function viewOf(bytes: Uint8Array): DataView {
  if (bytes !== lastBytes) {
    lastBytes = bytes;
    lastView = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return lastView;
}

/** The bytes [start, end) of what `view` shows, as a Buffer over the same memory (no copy). */
export const bytesOf = (view: DataView, start: number, end: number): Buffer => Buffer.from(view.buffer, view.byteOffset + start, end - start);
