import { zlibModule } from '../../shared/builtins.ts';
import { MAX_KEY_BYTES } from '../../protocol/limits.ts';
import { copyBytes } from '../engine/copy-bytes.ts';

// The snapshot file format (version 1), all integers little-endian:
//
//   header   8  magic "KVSNAPSH"
//            4  format version (u32) = 1
//            4  flags (u32), 0; a reader refuses bits it does not know
//            8  the moment the snapshot began, unix ms (f64)
//   record   1  type 0x01
//            1  key length k, 1..250
//            4  value length v (u32)
//            8  expiry, unix ms (f64); 0 = no expiry
//            k  key bytes
//            v  value bytes
//   trailer  1  type 0xFF
//            8  number of records (u64)
//            4  CRC-32 (IEEE 802.3, as zlib's crc32) of every byte before it
//
// Records come in the order of the store's LRU list at the time each was written, least
// recently used first, so a load that inserts them in file order ends with the most
// recently used keys the most recent (and a smaller cap keeps those).

export const SNAPSHOT_MAGIC = Buffer.from('KVSNAPSH', 'latin1');
export const SNAPSHOT_VERSION = 1;
export const HEADER_BYTES = 24;
export const RECORD_HEAD_BYTES = 14;
export const TRAILER_BYTES = 13;
const RECORD = 0x01;
const END = 0xff;

export type SnapshotFormatErrorReason = 'truncated' | 'checksum' | 'version' | 'magic' | 'corrupt';

/** A file that is not a whole, intact snapshot this version can read. */
export class SnapshotFormatError extends Error {
  override name = 'SnapshotFormatError';
  readonly reason: SnapshotFormatErrorReason;
  constructor(reason: SnapshotFormatErrorReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** What a file's size and trailer suggest it holds; a hint only, as the trailer is not checked yet. */
export interface SnapshotSizeHint {
  readonly records: number;
  /** Average key plus value bytes of a record. */
  readonly recordBytes: number;
}

/**
 * Reads the record count from `tail`, the file's last TRAILER_BYTES bytes, before the
 * records are read: undefined when they do not look like a trailer of a file that size.
 */
export function sizeHintOf(fileBytes: number, tail: Buffer): SnapshotSizeHint | undefined {
  if (tail.length !== TRAILER_BYTES || tail[0] !== END) return undefined;
  const records = Number(tail.readBigUInt64LE(1));
  if (records === 0) return undefined;
  const recordBytes = (fileBytes - HEADER_BYTES - TRAILER_BYTES) / records - RECORD_HEAD_BYTES;
  // Each record holds a key of at least one byte.
  return recordBytes >= 1 ? { records, recordBytes } : undefined;
}

const DEFAULT_CHUNK_BYTES = 1 << 20;

/** Chunks kept for reuse: a save queues at most a few dozen before it waits for the disk. */
const MAX_SPARE_CHUNKS = 64;

/**
 * Encoder chunks of one size, kept for reuse. Periodic saves share one pool, so a save
 * every second reuses the chunks of the last instead of allocating its ~16 MiB of queue
 * afresh: V8 counts each allocation as external memory, and that growth starts full
 * collections, pauses for every client.
 */
export class ChunkPool {
  readonly chunkBytes: number;
  readonly #spare: Buffer[] = [];

  constructor(chunkBytes = DEFAULT_CHUNK_BYTES) {
    this.chunkBytes = chunkBytes;
  }

  /** Chunks held for reuse. */
  get spare(): number {
    return this.#spare.length;
  }

  take(): Buffer {
    return this.#spare.pop() ?? Buffer.allocUnsafeSlow(this.chunkBytes);
  }

  /** Takes back a chunk of this pool (or a view from its start); others are left to the collector. */
  give(chunk: Buffer): void {
    const whole = chunk.buffer;
    if (chunk.byteOffset !== 0 || whole.byteLength !== this.chunkBytes || this.#spare.length >= MAX_SPARE_CHUNKS) return;
    this.#spare.push(Buffer.from(whole));
  }
}

/**
 * Serialises records into chunks from `pool` and hands each full chunk to `sink`, which
 * owns it until it gives it back with recycle() (or never: then the encoder never touches
 * it again). Values larger than a chunk get a chunk of their own size. Why chunks are
 * recycled: see ChunkPool.
 */
export class SnapshotEncoder {
  readonly #sink: (chunk: Buffer) => void;
  #chunk: Buffer;
  #at = 0;
  #crc = 0;
  readonly #crc32 = zlibModule().crc32;
  #records = 0;
  #bytes = 0;
  #finished = false;
  readonly #pool: ChunkPool;

  constructor(sink: (chunk: Buffer) => void, createdAtMs: number, pool = new ChunkPool()) {
    this.#sink = sink;
    this.#pool = pool;
    this.#chunk = pool.take();
    const h = this.#room(HEADER_BYTES);
    SNAPSHOT_MAGIC.copy(h, this.#at);
    h.writeUInt32LE(SNAPSHOT_VERSION, this.#at + 8);
    h.writeUInt32LE(0, this.#at + 12);
    h.writeDoubleLE(createdAtMs, this.#at + 16);
    this.#at += HEADER_BYTES;
  }

  get records(): number {
    return this.#records;
  }

  /** Bytes handed to the sink so far (the whole file once finished). */
  get bytes(): number {
    return this.#bytes;
  }

  /** One entry; `expiresAtMs` is unix ms, 0 for none. */
  record(src: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number, expiresAtMs: number): void {
    const k = keyEnd - keyStart;
    const v = valueEnd - valueStart;
    const c = this.#room(RECORD_HEAD_BYTES + k + v);
    let at = this.#at;
    c[at] = RECORD;
    c[at + 1] = k;
    c.writeUInt32LE(v, at + 2);
    c.writeDoubleLE(expiresAtMs, at + 6);
    at += RECORD_HEAD_BYTES;
    at = copyBytes(src, keyStart, keyEnd, c, at);
    this.#at = copyBytes(src, valueStart, valueEnd, c, at);
    this.#records++;
  }

  /** Takes back a chunk handed to the sink, once the sink is done with its bytes, to fill again. */
  recycle(chunk: Buffer): void {
    this.#pool.give(chunk);
  }

  /** Writes the trailer and hands over the last chunk. */
  finish(): void {
    if (this.#finished) throw new Error('snapshot encoder already finished');
    this.#finished = true;
    const c = this.#room(TRAILER_BYTES);
    c[this.#at] = END;
    c.writeBigUInt64LE(BigInt(this.#records), this.#at + 1);
    this.#at += 9;
    this.#crc = this.#crc32(c.subarray(0, this.#at), this.#crc);
    c.writeUInt32LE(this.#crc, this.#at);
    this.#at += 4;
    this.#hand();
  }

  /** The current chunk with room for `n` more bytes (a new one when it is short). */
  #room(n: number): Buffer {
    if (this.#at + n <= this.#chunk.length) return this.#chunk;
    if (this.#at > 0) {
      this.#crc = this.#crc32(this.#chunk.subarray(0, this.#at), this.#crc);
      this.#hand();
    }
    this.#chunk = n <= this.#pool.chunkBytes ? this.#pool.take() : Buffer.allocUnsafeSlow(n);
    return this.#chunk;
  }

  #hand(): void {
    const out = this.#chunk.subarray(0, this.#at);
    this.#bytes += out.length;
    this.#at = 0;
    this.#chunk = Buffer.alloc(0);
    this.#sink(out);
  }
}

/** What the decoder hands over for each record: positions in `src`, valid only during the call. */
export type RecordHandler = (src: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number, expiresAtMs: number) => void;

export interface SnapshotSummary {
  readonly version: number;
  readonly createdAtMs: number;
  readonly records: number;
  readonly bytes: number;
}

/**
 * Parses a snapshot fed in chunks of any size. Each record is handed to `onRecord` as soon
 * as it is whole; `end()` checks the trailer (count and checksum). A caller that applies
 * records as they come must discard them when push() or end() throws.
 */
export class SnapshotDecoder {
  readonly #onRecord: RecordHandler;
  /** Bytes not yet consumed (copies), in arrival order. */
  #pieces: Buffer[] = [];
  #pendingBytes = 0;
  /** Pending bytes needed before parsing can move on. */
  #need = HEADER_BYTES;
  #crc = 0;
  readonly #crc32 = zlibModule().crc32;
  #bytes = 0;
  #records = 0;
  #version = 0;
  #createdAtMs = 0;
  #header = false;
  #ended = false;

  constructor(onRecord: RecordHandler) {
    this.#onRecord = onRecord;
  }

  /** Takes `chunk`; the caller may reuse it once push returns (what is kept is copied). */
  push(chunk: Buffer): void {
    let at = 0;
    // Bytes kept from earlier chunks wait for the rest of a step (a header, a record): join
    // them with just the bytes of this chunk that step needs, not the whole chunk, so only
    // records that straddle chunks are copied (kept, then joined once).
    while (this.#pendingBytes > 0 && at < chunk.length) {
      const take = Math.min(this.#need - this.#pendingBytes, chunk.length - at);
      this.#pieces.push(Buffer.from(chunk.subarray(at, at + take)));
      this.#pendingBytes += take;
      at += take;
      if (this.#pendingBytes < this.#need) return;
      const joined = this.#pieces.length === 1 ? this.#pieces[0]! : Buffer.concat(this.#pieces, this.#pendingBytes);
      this.#pieces = [];
      this.#pendingBytes = 0;
      this.#parseAndKeep(joined, true);
    }
    // Nothing pending: records are read in place.
    if (at < chunk.length) this.#parseAndKeep(at === 0 ? chunk : chunk.subarray(at), false);
  }

  /** Reads what it can of `buf` and keeps the rest (copied unless `owned`, the decoder's own bytes) for the next push. */
  #parseAndKeep(buf: Buffer, owned: boolean): void {
    const used = this.#parse(buf);
    // After the trailer the checksum is final (#readTrailer folded this buffer up to it).
    if (!this.#ended) this.#crc = this.#crc32(buf.subarray(0, used), this.#crc);
    this.#bytes += used;
    if (used < buf.length) {
      const rest = buf.subarray(used);
      this.#pieces.push(owned ? rest : Buffer.from(rest));
      this.#pendingBytes = rest.length;
    }
  }

  /**
   * Reads the header (if not yet read) and the whole records at the start of `buf`; sets
   * #need to the bytes the next step needs when buf ends inside it. Returns the bytes read.
   */
  #parse(buf: Buffer): number {
    let at = 0;
    this.#need = 0;
    if (!this.#header) {
      if (buf.length < HEADER_BYTES) {
        this.#need = HEADER_BYTES;
        return 0;
      }
      this.#readHeader(buf);
      at = HEADER_BYTES;
    }
    while (at < buf.length) {
      if (this.#ended) throw new SnapshotFormatError('corrupt', 'bytes after the trailer');
      const type = buf[at];
      if (type === END) {
        if (buf.length - at < TRAILER_BYTES) {
          this.#need = TRAILER_BYTES;
          break;
        }
        this.#readTrailer(buf, at);
        at += TRAILER_BYTES;
        continue;
      }
      if (type !== RECORD) throw new SnapshotFormatError('corrupt', `unknown record type 0x${type!.toString(16)} at byte ${this.#bytes + at}`);
      if (buf.length - at < RECORD_HEAD_BYTES) {
        this.#need = RECORD_HEAD_BYTES;
        break;
      }
      const k = buf[at + 1]!;
      const v = buf.readUInt32LE(at + 2);
      if (k === 0 || k > MAX_KEY_BYTES) throw new SnapshotFormatError('corrupt', `key length ${k} at byte ${this.#bytes + at}`);
      const size = RECORD_HEAD_BYTES + k + v;
      if (buf.length - at < size) {
        this.#need = size;
        break;
      }
      // Most records have no expiry: eight zero bytes, no float to assemble.
      const expiresAtMs = buf.readInt32LE(at + 6) === 0 && buf.readInt32LE(at + 10) === 0 ? 0 : buf.readDoubleLE(at + 6);
      const ks = at + RECORD_HEAD_BYTES;
      this.#onRecord(buf, ks, ks + k, ks + k, ks + k + v, expiresAtMs);
      this.#records++;
      at += size;
    }
    return at;
  }

  /** Checks that the trailer was read and matched; returns what the file held. */
  end(): SnapshotSummary {
    if (!this.#header) throw new SnapshotFormatError('truncated', `the file ends inside its header (${this.#pendingBytes} bytes)`);
    if (!this.#ended) throw new SnapshotFormatError('truncated', `the file ends after ${this.#records} records without its trailer`);
    return { version: this.#version, createdAtMs: this.#createdAtMs, records: this.#records, bytes: this.#bytes };
  }

  #readHeader(buf: Buffer): void {
    if (!buf.subarray(0, 8).equals(SNAPSHOT_MAGIC)) throw new SnapshotFormatError('magic', 'not a kvstack snapshot (bad magic bytes)');
    const version = buf.readUInt32LE(8);
    if (version !== SNAPSHOT_VERSION) throw new SnapshotFormatError('version', `format version ${version}, this store reads ${SNAPSHOT_VERSION}`);
    const flags = buf.readUInt32LE(12);
    if (flags !== 0) throw new SnapshotFormatError('version', `unknown flags 0x${flags.toString(16)}`);
    this.#version = version;
    this.#createdAtMs = buf.readDoubleLE(16);
    this.#header = true;
  }

  #readTrailer(buf: Buffer, at: number): void {
    const count = buf.readBigUInt64LE(at + 1);
    const stored = buf.readUInt32LE(at + 9);
    // Everything before the checksum: what was consumed earlier plus this buffer up to it.
    const crc = this.#crc32(buf.subarray(0, at + 9), this.#crc);
    if (crc !== stored) throw new SnapshotFormatError('checksum', 'checksum mismatch');
    if (count !== BigInt(this.#records)) throw new SnapshotFormatError('corrupt', `trailer counts ${count} records, the file holds ${this.#records}`);
    this.#crc = crc;
    this.#ended = true;
  }
}
