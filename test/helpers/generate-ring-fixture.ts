// Writes test/fixtures/ring-fixture.json from the ring as it is now:
//   node test/helpers/generate-ring-fixture.ts
// Run it only when the algorithm changes on purpose (which moves keys in every deployment
// and every other-language client): test/ring-fixture.test.ts checks the ring against
// the committed file.
import { writeFileSync } from 'node:fs';
import { keyHash, memberSeed, ShardRing } from '../../services/ring/shard-ring.ts';
import { fixtureKeys, fixtureMemberLists } from './ring-fixture-data.ts';

const rings = Object.entries(fixtureMemberLists).map(([list, names]) => [list, new ShardRing(names.map((name) => ({ name })))] as const);
const allNames = [...new Set(Object.values(fixtureMemberLists).flat())];

const fixture = {
  about: 'key -> shard for published member lists; the algorithm is in docs/sharding.md',
  algorithm: 'rendezvous hashing: owner = argmax over members of fmix32(murmur3_32(key bytes, 0) XOR murmur3_32(UTF-8 name, 0)), unsigned 32-bit',
  memberLists: fixtureMemberLists,
  memberSeeds: Object.fromEntries(allNames.map((name) => [name, memberSeed(name)])),
  keys: fixtureKeys().map((key) => ({
    key,
    utf8Hex: Buffer.from(key, 'utf8').toString('hex'),
    hash: keyHash(key),
    shard: Object.fromEntries(rings.map(([list, ring]) => [list, ring.shardFor(key).name])),
    preference5: new ShardRing(fixtureMemberLists['5']!.map((name) => ({ name }))).preference(key).map((m) => m.name),
  })),
};

const path = new URL('../fixtures/ring-fixture.json', import.meta.url);
// One line per member list and per key, so a change shows as the keys it moved.
const lines = (entries: [string, unknown][]) => entries.map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(',\n');
const text = [
  '{',
  `"about": ${JSON.stringify(fixture.about)},`,
  `"algorithm": ${JSON.stringify(fixture.algorithm)},`,
  `"memberLists": {\n${lines(Object.entries(fixture.memberLists))}\n},`,
  `"memberSeeds": ${JSON.stringify(fixture.memberSeeds)},`,
  `"keys": [\n${fixture.keys.map((k) => '  ' + JSON.stringify(k)).join(',\n')}\n]`,
  '}',
].join('\n');
writeFileSync(path, text + '\n');
console.log(`wrote ${fixture.keys.length} keys x ${rings.length} member lists to test/fixtures/ring-fixture.json`);
