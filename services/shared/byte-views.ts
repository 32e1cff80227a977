/**
 * A DataView of the last buffer asked about, made again only when the buffer changes.
 *
 * Why: the command path reads keys four bytes at a time through a DataView (one 32-bit
 * load where there were four byte loads, each checked against the buffer's bounds), and
 * its lines come from a few long-lived buffers (the shared read buffer above all), so the
 * view asked for is nearly always the one made for the line before.
 */
export class ByteViewCache {
  #bytes: Uint8Array | null = null;
  #view: DataView = new DataView(new ArrayBuffer(0));

  of(bytes: Uint8Array): DataView {
    if (bytes !== this.#bytes) {
      this.#bytes = bytes;
      this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    return this.#view;
  }
}
