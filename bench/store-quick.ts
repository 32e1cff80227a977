// Quick, socket-free measure of the store's per-command cost: feeds pre-built chunks of
// pipelined commands to a StoreServer connection through a stand-in socket and times the
// processing only (framing, parsing, engine, metrics, reply building). Useful for A/B
// checks of the hot path on a busy machine, where end-to-end numbers (`kv bench`) swing;
// bench/store-ab.ts compares two builds this way, in one process.
//
//   node bench/store-quick.ts [--depth 16] [--keys 100000] [--value-size 100] [--rounds 7] [--only <variant>]
//
// Prints commands per CPU-second for each variant (best of the rounds): the server as shipped, with metrics
// recording switched off, with prom-client's labelled inc()/observe() instead of the
// array counters (what the arrays save), and with a bare Map in place of the engine (the
// server's own share of the cost).
import { Counter, Histogram, Registry } from 'prom-client';
import { COMMAND_NAMES } from '../services/protocol/command-parser.ts';
import { lineBound } from '../services/protocol/limits.ts';
import { createLogger } from '../services/shared/logger.ts';
import { COMMANDS_PER_TURN } from '../services/store/network/served-connection.ts';
import { KvEngine } from '../services/store/engine/kv-engine.ts';
import type { ValueRange } from '../services/store/engine/engine-api.ts';
import { createStoreMetrics, DURATION_BUCKETS } from '../services/store/store-metrics.ts';
import { StoreServer } from '../services/store/network/tcp-server.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { benchServerOptions, buildChunks, connectStandIn, keyOf } from './stand-in-connection.ts';

const opts = parseOptions('Usage: node bench/store-quick.ts [--depth 16] [--keys 100000] [--value-size 100] [--rounds 7] [--commands 400000] [--only <variant>]', {
  depth: { type: 'string' },
  keys: { type: 'string' },
  'value-size': { type: 'string' },
  rounds: { type: 'string' },
  commands: { type: 'string' },
  only: { type: 'string' },
});
const whole = (name: string, raw: string | undefined, fallback: number) => numberOption(name, raw, fallback, { min: 1, integer: true });
const depth = whole('--depth', opts.depth, 16);
const keys = whole('--keys', opts.keys, 100_000);
const valueSize = numberOption('--value-size', opts['value-size'], 100, { integer: true });
const rounds = whole('--rounds', opts.rounds, 7);
const perRound = whole('--commands', opts.commands, 400_000);

const value = 'v'.repeat(valueSize);

type Variant = 'shipped' | 'no metrics' | 'prom-client labelled' | 'bare Map engine';

/** The engine's interface over a plain Map of strings: no LRU order, no TTL, no accounting. */
class BareMapEngine {
  /** Values as views, made once when set: a GET hands out a view, as KvEngine's does. */
  readonly map = new Map<string, DataView>();
  usageBytes = 0;
  keyCount = 0;
  maxMemoryBytes = 1e12;
  evictions = 0;
  expired = 0;
  hits = 0;
  misses = 0;
  expiryBacklog = 0;
  expiryDue = false;
  footprintEvictions = 0;
  arenaBytes = 0;
  footprintBytes = 0;
  footprintLimitBytes = 1e12;
  prefetch(): void {} // a Map has nothing to load ahead
  set(key: string, v: Buffer): 'ok' {
    this.map.set(key, new DataView(v.buffer, v.byteOffset, v.length));
    return 'ok';
  }
  getAt(buf: Buffer, ks: number, ke: number, into: ValueRange): DataView | undefined {
    const v = this.map.get(buf.toString('utf8', ks, ke));
    if (v === undefined) return undefined;
    into.start = 0;
    into.end = v.byteLength;
    return v;
  }
  setAt(buf: Buffer, ks: number, ke: number, vs: number, ve: number): 'ok' {
    return this.set(buf.toString('utf8', ks, ke), Buffer.from(buf.subarray(vs, ve)));
  }
  deleteAt(buf: Buffer, ks: number, ke: number): boolean {
    return this.map.delete(buf.toString('utf8', ks, ke));
  }
  expireAt(): boolean {
    return false;
  }
  ttlAt(): null {
    return null;
  }
  sweepExpired(): number {
    return 0;
  }
  rehashFor(): boolean {
    return false;
  }
}

async function run(variant: Variant, chunks: Buffer[]): Promise<number> {
  const registry = new Registry();
  const engine = variant === 'bare Map engine' ? new BareMapEngine() : new KvEngine({ maxMemoryBytes: 1e12, evictionPolicy: 'lru' });
  const valueBytes = Buffer.from(value);
  for (let i = 0; i < keys; i++) {
    const k = Buffer.from(keyOf(i));
    const line = Buffer.concat([k, valueBytes]);
    engine.setAt(line, 0, k.length, k.length, line.length);
  }
  const metrics = createStoreMetrics({ registry, engine, connections: () => 1, maxConnections: 10 });
  if (variant === 'no metrics') metrics.record = () => {};
  if (variant === 'prom-client labelled') {
    const counter = new Counter({ name: 'c', help: 'c', labelNames: ['command', 'result'], registers: [registry] });
    const histogram = new Histogram({ name: 'h', help: 'h', labelNames: ['command'], buckets: [...DURATION_BUCKETS], registers: [registry] });
    const results = ['ok', 'not_found', 'error'];
    metrics.record = (command, result, seconds) => {
      counter.inc({ command: COMMAND_NAMES[command]!, result: results[result]! });
      histogram.observe({ command: COMMAND_NAMES[command]! }, seconds);
    };
  }
  const socket = connectStandIn(new StoreServer(benchServerOptions(engine, metrics, createLogger({ name: 'bench', level: 'silent' }), lineBound(1 << 20))));
  // CPU time, not wall time: on a shared machine the process is descheduled at random.
  // Turns of the event loop between groups of chunks, so replies are written as in a real
  // run (at each turn's end) and the per-turn command budget is never the limit.
  const perTurn = Math.max(1, Math.floor(COMMANDS_PER_TURN / depth));
  const started = process.cpuUsage();
  for (let i = 0; i < chunks.length; i++) {
    socket.emit('data', chunks[i]!);
    if (i % perTurn === perTurn - 1) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setImmediate(r));
  const used = process.cpuUsage(started);
  return (chunks.length * depth) / ((used.user + used.system) / 1e6);
}

const chunks = buildChunks({ depth, keys, valueSize }, Math.ceil(perRound / depth));
const allVariants: Variant[] = ['shipped', 'no metrics', 'prom-client labelled', 'bare Map engine'];
const variants = opts.only === undefined ? allVariants : allVariants.filter((v) => v === opts.only);
if (variants.length === 0) throw new Error(`--only: one of ${allVariants.join(', ')}`);
const best = new Map<Variant, number>(variants.map((v) => [v, 0]));
for (let r = 0; r < rounds; r++) {
  for (const v of variants) best.set(v, Math.max(best.get(v)!, await run(v, chunks)));
}
console.log(`depth ${depth}, ${keys} keys, ${valueSize}-byte values, 9:1 GET:SET, best of ${rounds} rounds of ${chunks.length * depth} commands`);
for (const v of variants) console.log(`${v.padEnd(22)} ${Math.round(best.get(v)!).toLocaleString('en-US').padStart(10)} commands per CPU-second  (${(1e9 / best.get(v)!).toFixed(0)} ns each)`);
