import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChunkPool, HEADER_BYTES, RECORD_HEAD_BYTES, sizeHintOf, SnapshotDecoder, SnapshotEncoder, SnapshotFormatError, TRAILER_BYTES } from '../services/store/snapshots/snapshot-format.ts';

interface Entry {
  key: Buffer;
  value: Buffer;
  expiresAtMs: number;
}

function encode(entries: readonly Entry[], createdAtMs = 1_700_000_000_000, chunkBytes?: number): { file: Buffer; chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  const enc = new SnapshotEncoder((c) => chunks.push(c), createdAtMs, new ChunkPool(chunkBytes));
  for (const e of entries) {
    const src = Buffer.concat([Buffer.from('junk'), e.key, e.value]);
    enc.record(src, 4, 4 + e.key.length, 4 + e.key.length, src.length, e.expiresAtMs);
  }
  enc.finish();
  const file = Buffer.concat(chunks);
  expect(enc.bytes).toBe(file.length);
  expect(enc.records).toBe(entries.length);
  return { file, chunks };
}

/**
 * Decodes `file` fed in pieces of `step` bytes (0 = whole), each through one scratch buffer
 * that is overwritten after every push (as the file reader reuses its buffers).
 */
function decode(file: Buffer, step = 0): { entries: Entry[]; createdAtMs: number; records: number } {
  const entries: Entry[] = [];
  const dec = new SnapshotDecoder((src, ks, ke, vs, ve, expiresAtMs) => {
    entries.push({ key: Buffer.from(src.subarray(ks, ke)), value: Buffer.from(src.subarray(vs, ve)), expiresAtMs });
  });
  const size = step === 0 ? Math.max(file.length, 1) : step;
  const scratch = Buffer.alloc(size);
  for (let i = 0; i < file.length; i += size) {
    const n = file.copy(scratch, 0, i, i + size);
    dec.push(scratch.subarray(0, n));
    scratch.fill(0xee);
  }
  const summary = dec.end();
  expect(summary.bytes).toBe(file.length);
  return { entries, createdAtMs: summary.createdAtMs, records: summary.records };
}

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof SnapshotFormatError) return err.reason;
    throw err;
  }
  return 'accepted';
}

const sample: Entry[] = [
  { key: Buffer.from('a'), value: Buffer.alloc(0), expiresAtMs: 0 },
  { key: Buffer.from('binary'), value: Buffer.from([0, 1, 0x0d, 0x0a, 0xff, 0x20]), expiresAtMs: 1_800_000_000_123.5 },
  { key: Buffer.from('κλειδί-ключ-鍵'), value: Buffer.from('ünïcödé value'), expiresAtMs: 0 },
  { key: Buffer.alloc(250, 0x6b), value: Buffer.alloc(3000, 0x76), expiresAtMs: 42 },
  { key: Buffer.from('large'), value: Buffer.alloc(3 * 1024 * 1024 + 7, 0x61), expiresAtMs: 0 },
];

describe('snapshot format', () => {
  it('round-trips keys, empty, binary and large values and expiry times, whole and in pieces', () => {
    const { file } = encode(sample, 1_234.5);
    for (const step of [0, 1 << 20, 4093]) {
      const got = decode(file, step);
      expect(got.createdAtMs).toBe(1_234.5);
      expect(got.records).toBe(sample.length);
      expect(got.entries).toEqual(sample);
    }
    // Byte by byte, without the 3 MiB value.
    const small = sample.slice(0, 4);
    expect(decode(encode(small).file, 1).entries).toEqual(small);
  });

  it('round-trips an empty snapshot', () => {
    const { file } = encode([]);
    expect(file.length).toBe(HEADER_BYTES + TRAILER_BYTES);
    expect(decode(file, 1).entries).toEqual([]);
  });

  it('hands chunks no larger than the chunk size, except one holding a larger record', () => {
    const { chunks } = encode(sample, 0, 4096);
    for (const c of chunks) {
      if (c.length > 4096) expect(c.length).toBeLessThanOrEqual(14 + 5 + 3 * 1024 * 1024 + 7);
    }
    expect(chunks.filter((c) => c.length > 4096)).toHaveLength(1);
  });

  it('fills chunks given back with recycle() again, and the file is the same bytes', () => {
    const many = [...sample, ...Array.from({ length: 200 }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.alloc(500, i), expiresAtMs: 0 }))];
    const { file } = encode(many, 0, 4096);
    const copies: Buffer[] = [];
    const buffers = new Set<ArrayBufferLike>();
    const enc = new SnapshotEncoder((c) => {
      copies.push(Buffer.from(c)); // the sink is done with its bytes once copied
      buffers.add(c.buffer);
      enc.recycle(c);
    }, 0, new ChunkPool(4096));
    for (const e of many) {
      const src = Buffer.concat([Buffer.from('junk'), e.key, e.value]);
      enc.record(src, 4, 4 + e.key.length, 4 + e.key.length, src.length, e.expiresAtMs);
    }
    enc.finish();
    expect(Buffer.concat(copies).equals(file)).toBe(true);
    expect(copies.length).toBeGreaterThan(20);
    // Every chunk of the chunk size came from the same two buffers: one being filled, one handed over.
    expect(buffers.size).toBeLessThanOrEqual(3); // plus the one holding the larger record
  });

  it('a second encoder on the same pool reuses the chunks the first gave back', () => {
    const pool = new ChunkPool(4096);
    const records = Array.from({ length: 100 }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.alloc(300, i), expiresAtMs: 0 }));
    const run = (): Set<ArrayBufferLike> => {
      const held: Buffer[] = [];
      const buffers = new Set<ArrayBufferLike>();
      const enc = new SnapshotEncoder((c) => (held.push(c), buffers.add(c.buffer)), 0, pool);
      for (const e of records) {
        const src = Buffer.concat([e.key, e.value]);
        enc.record(src, 0, e.key.length, e.key.length, src.length, 0);
      }
      enc.finish();
      for (const c of held) enc.recycle(c); // the sink is done with all of them at once
      return buffers;
    };
    const first = run();
    expect(pool.spare).toBe(first.size);
    const second = run();
    expect([...second].every((b) => first.has(b))).toBe(true);
    // Not what it does not own: another size, or a view not at the start of its buffer.
    pool.give(Buffer.alloc(100));
    pool.give(Buffer.alloc(8192).subarray(4096));
    expect(pool.spare).toBe(first.size);
  });

  it('round-trips any records fed in any pieces (property)', () => {
    const entry = fc.record({
      key: fc.uint8Array({ minLength: 1, maxLength: 250 }).map((a) => Buffer.from(a)),
      value: fc.uint8Array({ maxLength: 5000 }).map((a) => Buffer.from(a)),
      expiresAtMs: fc.oneof(fc.constant(0), fc.double({ min: 1, max: 4e12, noNaN: true })),
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 40 }), fc.integer({ min: 1, max: 9000 }), fc.integer({ min: 64, max: 8192 }), (entries, step, chunkBytes) => {
        const { file } = encode(entries, 5, chunkBytes);
        expect(decode(file, step).entries).toEqual(entries);
      }),
      { numRuns: 150 },
    );
  });

  it('refuses a file cut at any byte as truncated', () => {
    const { file } = encode(sample.slice(0, 3));
    for (let cut = 0; cut < file.length; cut++) {
      expect(reasonOf(() => decode(file.subarray(0, cut), 7)), `cut at ${cut}`).toBe('truncated');
    }
  });

  it('refuses a file with any single bit flipped', () => {
    const { file } = encode(sample.slice(0, 3));
    const reasons = new Set<string>();
    for (let i = 0; i < file.length; i++) {
      for (const bit of [0, 7]) {
        const bad = Buffer.from(file);
        bad[i]! ^= 1 << bit;
        const reason = reasonOf(() => decode(bad, 101));
        expect(reason, `byte ${i} bit ${bit}`).not.toBe('accepted');
        reasons.add(reason);
      }
    }
    // Value bytes fail the checksum; the header's magic and version are named as such.
    expect(reasons).toContain('checksum');
    expect(reasons).toContain('magic');
    expect(reasons).toContain('version');
  });

  it('refuses an unknown version, unknown flags and bytes after the trailer', () => {
    const { file } = encode(sample.slice(0, 2));
    const v2 = Buffer.from(file);
    v2.writeUInt32LE(2, 8);
    expect(reasonOf(() => decode(v2))).toBe('version');
    const flagged = Buffer.from(file);
    flagged.writeUInt32LE(1, 12);
    expect(reasonOf(() => decode(flagged))).toBe('version');
    expect(reasonOf(() => decode(Buffer.concat([file, Buffer.from([1])])))).toBe('corrupt');
    expect(reasonOf(() => decode(Buffer.from('not a snapshot at all, just text')))).toBe('magic');
  });

  it('reads a size hint (record count, average key and value bytes) from the trailer alone', () => {
    const entries = sample.slice(0, 4);
    const { file } = encode(entries);
    const tail = file.subarray(file.length - TRAILER_BYTES);
    const payload = entries.reduce((sum, e) => sum + e.key.length + e.value.length, 0);
    expect(sizeHintOf(file.length, tail)).toEqual({ records: 4, recordBytes: payload / 4 });
    expect(sizeHintOf(file.length, file.subarray(file.length - TRAILER_BYTES - 1, file.length - 1))).toBeUndefined();
    expect(sizeHintOf(file.length, tail.subarray(1))).toBeUndefined();
    // A count the file cannot hold (records of at least a 1-byte key each) is no hint.
    const lying = Buffer.from(tail);
    lying.writeBigUInt64LE(BigInt(Math.ceil(file.length / (RECORD_HEAD_BYTES + 1))), 1);
    expect(sizeHintOf(file.length, lying)).toBeUndefined();
    const { file: empty } = encode([]);
    expect(sizeHintOf(empty.length, empty.subarray(empty.length - TRAILER_BYTES))).toBeUndefined();
  });
});
