/**
 * Frees the memory of `bytes` now, not at the collection that finds it dead: its
 * ArrayBuffer is transferred to an empty one, which detaches it (every view of it then has
 * length 0) and releases its memory at once: a buffer of malloc's mmap size goes back to the
 * OS. Until a collection, a dead buffer counts in the process's resident memory, and a busy
 * store makes tens of MB of them a second (large lines and replies).
 *
 * Only a view of a whole ArrayBuffer of its own (Buffer.allocUnsafeSlow, a record page) is
 * freed; a view of part of a buffer (Node's Buffer pool) is left alone, since other views
 * share that memory. Returns whether it freed it.
 */
export function freeNow(bytes: Uint8Array): boolean {
  const buffer = bytes.buffer as ArrayBuffer;
  if (bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength || buffer.byteLength === 0) return false;
  buffer.transfer(0);
  return true;
}
