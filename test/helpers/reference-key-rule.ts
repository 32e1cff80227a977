const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * SPEC §1's key rule, written apart from key-rules.ts so the fuzz tests hold the store and
 * the backend to a second reading of it: 1–250 bytes of UTF-8, no byte 0x00–0x20 or 0x7F.
 */
export function refValidKey(key: Buffer): boolean {
  if (key.length < 1 || key.length > 250) return false;
  if (key.some((b) => b <= 0x20 || b === 0x7f)) return false;
  try {
    strictUtf8.decode(key);
    return true;
  } catch {
    return false;
  }
}
