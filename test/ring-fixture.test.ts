import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { keyHash, memberSeed, ShardRing } from '../services/ring/shard-ring.ts';
import { fixtureKeys, fixtureMemberLists } from './helpers/ring-fixture-data.ts';

// The committed fixture pins key -> shard for other-language clients (docs/sharding.md).
// This test recomputes every answer with the ring and compares: a change to the hash,
// the seeds, the byte order or the name mapping fails here instead of silently moving
// every key in every deployment.

interface FixtureKey {
  key: string;
  utf8Hex: string;
  hash: number;
  shard: Record<string, string>;
  preference5: string[];
}
interface Fixture {
  memberLists: Record<string, string[]>;
  memberSeeds: Record<string, number>;
  keys: FixtureKey[];
}

const fixture = JSON.parse(readFileSync(new URL('./fixtures/ring-fixture.json', import.meta.url), 'utf8')) as Fixture;
const ringOf = (names: readonly string[]) => new ShardRing(names.map((name) => ({ name })));

describe('ring fixture (test/fixtures/ring-fixture.json)', () => {
  it('publishes the member lists and keys of the generator, with non-ASCII and 250-byte keys', () => {
    expect(fixture.memberLists).toEqual(fixtureMemberLists);
    expect(fixture.keys.map((k) => k.key)).toEqual(fixtureKeys());
    expect(fixture.keys.length).toBeGreaterThanOrEqual(200);
    expect(fixture.keys.some((k) => /[^\x00-\x7f]/.test(k.key))).toBe(true);
    expect(fixture.keys.filter((k) => k.utf8Hex.length === 500).length).toBeGreaterThanOrEqual(10);
  });

  it('each key is stated by its UTF-8 bytes and hashes to the stated murmur3_32', () => {
    for (const k of fixture.keys) {
      expect(Buffer.from(k.key, 'utf8').toString('hex')).toBe(k.utf8Hex);
      expect(keyHash(k.key), k.key).toBe(k.hash);
      expect(keyHash(Buffer.from(k.utf8Hex, 'hex')), k.key).toBe(k.hash);
    }
    for (const [name, seed] of Object.entries(fixture.memberSeeds)) expect(memberSeed(name), name).toBe(seed);
  });

  it('routes every key to the shard the fixture names, for every member list', () => {
    for (const [list, names] of Object.entries(fixture.memberLists)) {
      const ring = ringOf(names);
      const mismatches = fixture.keys.filter((k) => ring.shardFor(k.key).name !== k.shard[list]);
      expect(mismatches.map((k) => k.key), `member list ${list}`).toEqual([]);
    }
  });

  it('gives every key the fixture\'s order of choices over five members', () => {
    const ring = ringOf(fixture.memberLists['5']!);
    for (const k of fixture.keys) expect(ring.preference(k.key).map((m) => m.name), k.key).toEqual(k.preference5);
  });

  it('spreads the fixture keys over every member of the small lists', () => {
    // guards against a fixture where every key landed on one shard
    for (const list of ['3', '5', 'named']) {
      const used = new Set(fixture.keys.map((k) => k.shard[list]));
      expect(used.size, list).toBe(fixture.memberLists[list]!.length);
    }
  });
});
