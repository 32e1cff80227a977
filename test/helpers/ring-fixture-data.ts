// The published member lists and keys of test/fixtures/ring-fixture.json: what a client
// in another language checks its routing against (docs/sharding.md).

export const fixtureMemberLists: Readonly<Record<string, readonly string[]>> = {
  '1': ['store-0'],
  '3': names(3),
  '5': names(5),
  '64': names(64),
  // default names (the KV_STORE entries as written) and an explicit one
  named: ['10.0.0.1:8765', '10.0.0.2:8765', '[fd00::3]:8765', 'cache-b'],
};

function names(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `store-${i}`);
}

/** A few hundred keys: short, long, ASCII, non-ASCII UTF-8, and 250-byte ones. */
export function fixtureKeys(): string[] {
  const keys: string[] = [];
  for (let i = 0; i < 200; i++) keys.push(`key-${i}`);
  for (const len of [1, 2, 3, 4, 5, 6, 7, 8]) keys.push('abcdefgh'.slice(0, len));
  for (const k of ['user:42', 'user:42:profile', 'a/b', '%41', 'Key', 'KEY', 'key', '~!@#$^&*()_+{}|"<>?', '0', '00', '-1']) keys.push(k);
  const words = ['clé', 'ключ', 'キー', '钥匙', '🔑', 'naïve-café', 'Ü', 'ελληνικά', 'עברית', 'a\u0301'];
  for (const w of words) for (let i = 0; i < 5; i++) keys.push(`${w}-${i}`);
  // 250 bytes exactly: 1-, 2-, 3- and 4-byte characters
  keys.push('k'.repeat(250));
  keys.push('é'.repeat(125));
  keys.push('キ'.repeat(83) + 'x');
  keys.push('🔑'.repeat(62) + 'ab');
  for (let i = 0; i < 8; i++) keys.push(`${i}`.padStart(250, String.fromCharCode(0x61 + i)));
  return keys;
}
