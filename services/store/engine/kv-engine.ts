import { MAX_KEY_BYTES } from '../../protocol/limits.ts';
import { bytesOf } from '../../shared/byte-views.ts';
import { type SetOutcome, ValueRange } from './engine-api.ts';
import { Keyspace } from './keyspace.ts';

// The store's engine: the keyspace (keyspace.ts), whose commands take key bytes straight
// from a socket's buffer, plus the same commands on strings, for tests, tools and
// embedding: keys as strings (UTF-8), values as standard base64.

export * from './keyspace.ts';

export class KvEngine extends Keyspace {
  get(key: string): string | undefined {
    const k = keyBytes(key);
    const at = new ValueRange();
    const page = this.getAt(k, 0, k.length, at);
    return page === undefined ? undefined : bytesOf(page, at.start, at.end).toString('base64');
  }

  /**
   * Stores `valueBase64` (padded standard base64). Throws (changing nothing) on a length
   * that is not a multiple of 4 or characters outside the base64 alphabet.
   */
  set(key: string, valueBase64: string, ttlSeconds?: number): SetOutcome {
    if ((valueBase64.length & 3) !== 0) {
      throw new TypeError('value must be padded standard base64 (length a multiple of 4)');
    }
    const value = Buffer.from(atob(valueBase64), 'latin1'); // atob throws on a bad alphabet
    return this.setBytes(key, value, 0, value.length, ttlSeconds);
  }

  /** `set` with the value bytes buf[start, end). */
  setBytes(key: string, buf: Buffer, start: number, end: number, ttlSeconds?: number): SetOutcome {
    const k = keyBytes(key);
    const line = Buffer.concat([k, buf.subarray(start, end)]);
    return this.setAt(line, 0, k.length, k.length, line.length, ttlSeconds);
  }

  delete(key: string): boolean {
    const k = keyBytes(key);
    return this.deleteAt(k, 0, k.length);
  }

  expire(key: string, seconds: number): boolean {
    const k = keyBytes(key);
    return this.expireAt(k, 0, k.length, seconds);
  }

  ttl(key: string): number | null {
    const k = keyBytes(key);
    return this.ttlAt(k, 0, k.length);
  }
}

function keyBytes(key: string): Buffer {
  const k = Buffer.from(key, 'utf8');
  if (k.length < 1 || k.length > MAX_KEY_BYTES) {
    throw new RangeError(`key must be 1 to ${MAX_KEY_BYTES} bytes, got ${k.length}`);
  }
  return k;
}
