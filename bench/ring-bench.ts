// The shard ring's routing cost and its balance and movement over many keys, next to a
// ketama ring (the memcached clients' consistent hash) for comparison. A few seconds.
//   node bench/ring-bench.ts [--keys 1000000]
import { numberOption, parseOptions } from './harness/options.ts';
import { murmur3_32, murmur3_32Utf8 } from '../services/ring/murmur3.ts';
import { keyHash, ShardRing, type RingMember } from '../services/ring/shard-ring.ts';

const options = parseOptions('Usage: node bench/ring-bench.ts [--keys 1000000]', { keys: { type: 'string' } });
const KEYS = numberOption('--keys', options.keys, 1_000_000, { min: 1, integer: true });

const members = (n: number, from = 0): RingMember[] => Array.from({ length: n }, (_, i) => ({ name: `store-${from + i}` }));

/** Keys as the backend holds them: strings of 10 to 30 characters; every tenth not ASCII. */
const keys = Array.from({ length: KEYS }, (_, i) => (i % 10 === 9 ? `sessión:${i}:ü` : `user:${i}:profile`));
const keyBytes = keys.map((k) => Buffer.from(k));

// Routing cost on 10,000 keys passed over 100 times (the key in cache, as a request's is).
const TIMED = 10_000;
const timedKeys = keys.slice(0, TIMED);
const timedAscii = timedKeys.filter((_, i) => i % 10 !== 9);
const timedBytes = keyBytes.slice(0, TIMED);

function nsPerKey(fn: () => void, count: number): number {
  fn(); // warm up
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint();
    for (let rep = 0; rep < 20; rep++) fn();
    rounds.push(Number(process.hrtime.bigint() - t0) / count / 20);
  }
  return rounds.sort((a, b) => a - b)[2]!; // median of 5
}

let sink = 0;
console.log('routing cost, ns per key (median of 5 rounds; a shared, busy machine: compare within a run)');
console.log('shards  hash ASCII str  hash bytes  route ASCII str  route mixed str  route bytes');
for (const n of [1, 3, 8, 16, 64]) {
  const ring = new ShardRing(members(n));
  const hs = nsPerKey(() => { for (const k of timedAscii) sink ^= murmur3_32Utf8(k); }, timedAscii.length);
  const hb = nsPerKey(() => { for (const k of timedBytes) sink ^= murmur3_32(k, 0, k.length); }, TIMED);
  const ra = nsPerKey(() => { for (const k of timedAscii) sink ^= ring.shardFor(k).name.length; }, timedAscii.length);
  const rs = nsPerKey(() => { for (const k of timedKeys) sink ^= ring.shardFor(k).name.length; }, TIMED);
  const rb = nsPerKey(() => { for (const k of timedBytes) sink ^= ring.shardFor(k).name.length; }, TIMED);
  const col = (v: number, w: number) => v.toFixed(1).padStart(w);
  console.log(`${String(n).padStart(6)}  ${col(hs, 14)}  ${col(hb, 10)}  ${col(ra, 15)}  ${col(rs, 15)}  ${col(rb, 11)}`);
}

const hashes = Uint32Array.from(keyBytes, (k) => keyHash(k));

/** max/mean and min/mean of the keys per shard. */
function balance(owner: (h: number) => number, n: number): { max: number; min: number } {
  const counts = new Uint32Array(n);
  for (const h of hashes) counts[owner(h)]!++;
  const mean = KEYS / n;
  return { max: Math.max(...counts) / mean, min: Math.min(...counts) / mean };
}

// Ketama as libmemcached builds it, with MurmurHash3 instead of MD5: 160 points per
// shard at murmur3("name-i"), a key goes to the first point clockwise of its hash.
function ketama(n: number, pointsPerShard = 160): (h: number) => number {
  const points: { at: number; shard: number }[] = [];
  for (let s = 0; s < n; s++) for (let p = 0; p < pointsPerShard; p++) points.push({ at: murmur3_32Utf8(`store-${s}-${p}`), shard: s });
  points.sort((a, b) => a.at - b.at);
  const at = Uint32Array.from(points, (p) => p.at);
  const shard = Uint16Array.from(points, (p) => p.shard);
  return (h) => {
    let lo = 0;
    let hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (at[mid]! < h) lo = mid + 1;
      else hi = mid;
    }
    return shard[lo === at.length ? 0 : lo]!;
  };
}

console.log(`\nbalance over ${KEYS} keys: keys on the fullest shard / mean (emptiest / mean)`);
console.log('shards  rendezvous     ketama-160    ketama-1000   ketama-160 route ns/key');
for (const n of [2, 3, 8, 16, 64]) {
  const ring = new ShardRing(members(n));
  const hrw = balance((h) => ring.indexForHash(h), n);
  const k160 = ketama(n);
  const k = balance(k160, n);
  const k1000 = balance(ketama(n, 1000), n);
  const kns = nsPerKey(() => { for (const b of timedBytes) sink ^= k160(keyHash(b)); }, TIMED);
  const f = (b: { max: number; min: number }) => `${b.max.toFixed(3)} (${b.min.toFixed(3)})`;
  console.log(`${String(n).padStart(6)}  ${f(hrw)}  ${f(k)}  ${f(k1000)}  ${kns.toFixed(1)}`);
}

console.log(`\na join: share of the ${KEYS} keys that move (all of them to the new shard) vs 1/(N+1)`);
for (const n of [2, 3, 8, 63]) {
  const before = new ShardRing(members(n));
  const after = before.with({ name: `store-${n}` });
  let moved = 0;
  let elsewhere = 0;
  for (const h of hashes) {
    const a = before.indexForHash(h);
    const b = after.indexForHash(h);
    if (a !== b) {
      moved++;
      if (b !== n) elsewhere++;
    }
  }
  console.log(`N=${n} -> ${n + 1}: moved ${(moved / KEYS).toFixed(4)} (expected ${(1 / (n + 1)).toFixed(4)}), moved to an old shard: ${elsewhere}`);
}
if (sink === 0.5) console.log(sink);
