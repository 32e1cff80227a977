// Memory per key of the store engine: loads N keys (default 1,000,000) with values of
// --value-bytes (default 100) the way the TCP server hands them over (key and value as
// offsets into a socket-like buffer), forces garbage collection and prints resident
// memory and heap per key.
//
//   node --expose-gc bench/engine-memory.ts [--keys N] [--value-bytes B]
//        [--variant engine|map-of-buffers] [--churn] [--json]
//
// (Without --expose-gc it re-runs itself with it.) Memory is read after a memory-reducing
// collection, which is what V8's memory reducer does to an idle server; the RSS after an
// ordinary collection (young generation still at the size the bulk load grew it to) is
// printed too. Three RSS figures per key:
//   - whole process: this process's RSS / keys. It includes Node's TypeScript loader
//     (~30-40 MB here), which a compiled (dist/) server does not load;
//   - added: (RSS after loading - RSS before) / keys, what the keys themselves cost;
//   - compiled-JS process: (added + RSS of a bare `node` measured in a child) / keys, the
//     figure to compare with Redis's whole-process bytes per key.
// --variant map-of-buffers is the naive baseline (a Map of Buffers); --churn caps the engine
// at N entries' USAGE, loads N keys (the footprint limit, 1.25 times the cap plus a fixed
// slack, may hold fewer: the figures say how many), then writes N more keys (each
// evicting) with a GET per write, and measures again per key held.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { numberOption, parseOptions } from './harness/options.ts';
import { KvEngine } from '../services/store/engine/kv-engine.ts';

const args = parseOptions('Usage: node --expose-gc bench/engine-memory.ts [--keys N] [--value-bytes B] [--variant engine|map-of-buffers] [--churn] [--json]', {
  keys: { type: 'string' },
  'value-bytes': { type: 'string' },
  variant: { type: 'string', default: 'engine' },
  churn: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
});

if (typeof globalThis.gc !== 'function') {
  const script = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}
const gc = globalThis.gc;

const keys = numberOption('--keys', args.keys, 1_000_000, { min: 1, integer: true });
const valueBytes = numberOption('--value-bytes', args['value-bytes'], 100, { min: 1, integer: true });
const variant = args.variant;
if (variant !== 'engine' && variant !== 'map-of-buffers') {
  console.error(`--variant must be engine or map-of-buffers, got ${JSON.stringify(variant)}`);
  process.exit(2);
}
if (args.churn && variant !== 'engine') {
  console.error('--churn needs --variant engine');
  process.exit(2);
}

interface Measure {
  rssBytes: number;
  rssPlainGcBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
}

function measure(): Measure {
  gc!();
  const plain = process.memoryUsage().rss;
  gc!({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const m = process.memoryUsage();
  return { rssBytes: m.rss, rssPlainGcBytes: plain, heapUsedBytes: m.heapUsed, externalBytes: m.external };
}

// The server hands the engine a key and a value as offsets into the socket's buffer;
// do the same: one reused line buffer, `key:<12 digits> <value bytes>`.
const chunk = randomBytes(256 * 1024);
const line = Buffer.alloc(17 + valueBytes);
/** Writes key i and a value into `line`; the key is line[0, 16), the value line[17, end). */
const lineAt = (key: number, value: number): Buffer => {
  line.write(`key:${String(key).padStart(12, '0')} `, 'latin1');
  const off = (value * 4099) % (chunk.length - valueBytes);
  chunk.copy(line, 17, off, off + valueBytes);
  return line;
};
const keyAt = (i: number): string => `key:${String(i).padStart(12, '0')}`;

// RSS of a bare Node process (no TypeScript loader), after the same collection.
const bare = spawnSync(
  process.execPath,
  ['--expose-gc', '-e', "gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }); console.log(process.memoryUsage().rss)"],
  { encoding: 'utf8' },
);
const bareRssBytes = Number(bare.stdout.trim());
if (!(bareRssBytes > 0)) throw new Error(`could not measure a bare node process: ${bare.stderr}`);

const baseline = measure();
const entryBytes = 16 + valueBytes; // every key above is 16 bytes
const engine =
  variant === 'engine'
    ? new KvEngine({
        maxMemoryBytes: args.churn ? keys * entryBytes : Number.MAX_SAFE_INTEGER,
        evictionPolicy: 'lru',
      })
    : undefined;
const naive = variant === 'map-of-buffers' ? new Map<string, Buffer>() : undefined;

let started = performance.now();
for (let i = 0; i < keys; i++) {
  const buf = lineAt(i, i);
  if (engine !== undefined) engine.setAt(buf, 0, 16, 17, buf.length);
  else naive!.set(buf.toString('latin1', 0, 16), Buffer.from(buf.subarray(17)));
}
const loadSeconds = (performance.now() - started) / 1000;
const loaded = measure();
const held = engine?.keyCount ?? naive!.size;
if (held !== keys && !args.churn) throw new Error(`expected ${keys} keys, holding ${held}`);

let churn: { seconds: number; evictions: number; footprintEvictions: number; keysHeld: number; memory: Measure } | undefined;
if (engine !== undefined && args.churn) {
  started = performance.now();
  for (let i = 0; i < keys; i++) {
    const buf = lineAt(keys + i, i);
    engine.setAt(buf, 0, 16, 17, buf.length);
    engine.get(keyAt(keys + Math.floor(Math.random() * (i + 1))));
  }
  churn = {
    seconds: (performance.now() - started) / 1000,
    evictions: engine.evictions,
    footprintEvictions: engine.footprintEvictions,
    keysHeld: engine.keyCount,
    memory: measure(),
  };
}

const label = variant === 'engine' ? 'engine' : 'naive Map of Buffers';
const perKey = (bytes: number, n = held): number => Math.round((bytes / n) * 10) / 10;
const result = {
  variant,
  keys,
  keysHeld: held,
  valueBytes,
  keyBytes: 16,
  node: process.version,
  rssPerKeyCompiled: perKey(loaded.rssBytes - baseline.rssBytes + bareRssBytes),
  addedRssPerKey: perKey(loaded.rssBytes - baseline.rssBytes),
  addedRssPerKeyPlainGc: perKey(loaded.rssPlainGcBytes - baseline.rssBytes),
  addedHeapPerKey: perKey(loaded.heapUsedBytes + loaded.externalBytes - baseline.heapUsedBytes - baseline.externalBytes),
  rssPerKeyWholeProcess: perKey(loaded.rssBytes),
  usagePerKey: engine === undefined ? null : perKey(engine.usageBytes),
  recordBytesPerKey: engine === undefined ? null : perKey(engine.recordBytes),
  footprintBytesPerKey: engine === undefined ? null : perKey(engine.footprintBytes),
  rssBytes: loaded.rssBytes,
  baselineRssBytes: baseline.rssBytes,
  bareNodeRssBytes: bareRssBytes,
  loadSeconds: Math.round(loadSeconds * 100) / 100,
  churn:
    churn === undefined
      ? null
      : {
          operations: 2 * keys,
          opsPerSecond: Math.round((2 * keys) / churn.seconds),
          evictions: churn.evictions,
          footprintEvictions: churn.footprintEvictions,
          keysHeld: churn.keysHeld,
          rssPerKeyCompiled: perKey(churn.memory.rssBytes - baseline.rssBytes + bareRssBytes, churn.keysHeld),
          addedRssPerKey: perKey(churn.memory.rssBytes - baseline.rssBytes, churn.keysHeld),
          addedHeapPerKey: perKey(churn.memory.heapUsedBytes + churn.memory.externalBytes - baseline.heapUsedBytes - baseline.externalBytes, churn.keysHeld),
        },
};

if (args.json) {
  console.log(JSON.stringify(result));
} else {
  const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);
  console.log(
    `${label}, ${held} keys x ${valueBytes} B: RSS ${result.rssPerKeyCompiled} B/key as a compiled-JS process ` +
      `(${result.addedRssPerKey} B/key added + bare node ${mb(bareRssBytes)} MB); ` +
      `whole process ${result.rssPerKeyWholeProcess} B/key (${mb(loaded.rssBytes)} MB, ${mb(baseline.rssBytes)} MB before loading); ` +
      `added before the memory-reducing GC ${result.addedRssPerKeyPlainGc} B/key; heap+external added ${result.addedHeapPerKey} B/key` +
      (result.usagePerKey === null
        ? ''
        : `; USAGE ${result.usagePerKey} B/key, arena pages ${result.recordBytesPerKey} B/key, footprint ${result.footprintBytesPerKey} B/key`) +
      `; load ${result.loadSeconds} s`,
  );
  if (result.churn !== null) {
    console.log(
      `after churn (${keys} evicting SETs + ${keys} GETs, ${result.churn.opsPerSecond} ops/s, ${result.churn.evictions} evictions, ` +
        `${result.churn.footprintEvictions} of them on the footprint limit; ${result.churn.keysHeld} keys held): RSS ${result.churn.rssPerKeyCompiled} B/key as a compiled-JS process (${result.churn.addedRssPerKey} added), ` +
        `heap+external added ${result.churn.addedHeapPerKey} B/key`,
    );
  }
}
