// Two builds of the store's per-command path, side by side in one process: this checkout
// and another (a `git worktree` of another commit), each a StoreServer over its own
// KvEngine with the same keys, fed the same chunks of pipelined commands through a
// stand-in socket (as bench/store-quick.ts), in alternating slices.
//
//   node bench/store-ab.ts --against <other checkout> [--base <checkout>] [--depth 16]
//        [--keys 100000] [--value-size 100] [--slices 300] [--slice-commands 32000] [--password <text>]
//
// --base is the first build (this checkout by default), --against the second. --password
// gives each build that has a store password (STORE_PASSWORD) this one, and its connection
// sends AUTH before the load, so the load measures an authenticated connection; a build
// without passwords answers that AUTH with an error and serves as it always did.
//
// Why: on a shared virtual machine two runs of the same server a few seconds apart differ
// widely (steal, neighbours), so end-to-end rounds need dozens of pairs to see a change of
// a few percent. Slices of ~30 ms, alternating which build goes first, put both builds
// under the same conditions. Each run lays out memory anew, so the ratio of the totals
// varies by a few percent between runs of the same code (docs/benchmarks.md#where-a-commands-cpu-goes):
// run it a few times each way round (--base <other> --against . swaps them) and take the
// median. It measures the store's own work (framing, parsing, engine, metrics, replies),
// not the sockets': a change worth a few percent here is worth about a third of that
// end to end at depth 16, where the kernel and Node's I/O take the rest.
//
// Prints each build's ns per command (wall time of its slices: CPU time here is counted
// in ticks of several ms, too coarse for a slice), the ratio of the totals, and the
// median and quartiles of the slices' ratios.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { numberOption, parseOptions } from './harness/options.ts';
import { benchServerOptions, buildChunks, connectStandIn, keyOf, type ChunkShape, type StandInSocket } from './stand-in-connection.ts';

const opts = parseOptions(
  'Usage: node bench/store-ab.ts --against <other checkout> [--base <checkout>] [--depth 16] [--keys 100000] [--value-size 100] [--slices 300] [--slice-commands 32000] [--password <text>]',
  {
    against: { type: 'string' },
    base: { type: 'string' },
    depth: { type: 'string' },
    keys: { type: 'string' },
    'value-size': { type: 'string' },
    slices: { type: 'string' },
    'slice-commands': { type: 'string' },
    password: { type: 'string' },
  },
);
if (opts.against === undefined) throw new Error('--against <path of another checkout of kvstack> is required');
const count = (name: 'depth' | 'keys' | 'value-size' | 'slices' | 'slice-commands', fallback: number): number => numberOption(`--${name}`, opts[name], fallback, { min: 1, integer: true });
const shape: ChunkShape = { depth: count('depth', 16), keys: count('keys', 100_000), valueSize: count('value-size', 100) };
const slices = count('slices', 300);
const chunksPerSlice = Math.ceil(count('slice-commands', 32_000) / shape.depth);

/** A build's store, loaded from its checkout's own modules, with `keys` keys stored. */
async function storeOf(root: string): Promise<StandInSocket> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href);
  // A checkout from before the store's rooms (engine/, network/) has its modules at the store's root.
  const loadFirst = (...paths: string[]) => load(paths.find((p) => existsSync(resolve(root, p))) ?? paths[0]!);
  const { KvEngine } = await loadFirst('services/store/engine/kv-engine.ts', 'services/store/kv-engine.ts');
  const { createStoreMetrics } = await load('services/store/store-metrics.ts');
  const { StoreServer } = await loadFirst('services/store/network/tcp-server.ts', 'services/store/store-server.ts');
  const { createLogger } = await load('services/shared/logger.ts');
  const { lineBound } = await load('services/protocol/limits.ts');
  const { Registry } = await load('node_modules/prom-client/index.js');
  const engine = new KvEngine({ maxMemoryBytes: 1e12, evictionPolicy: 'lru' });
  const value = Buffer.alloc(shape.valueSize, 0x76);
  for (let i = 0; i < shape.keys; i++) {
    const line = Buffer.concat([Buffer.from(keyOf(i)), value]);
    engine.setAt(line, 0, line.length - value.length, line.length - value.length, line.length);
  }
  const metrics = createStoreMetrics({ registry: new Registry(), engine, connections: () => 1, maxConnections: 10 });
  const options = benchServerOptions(engine, metrics, createLogger({ name: 'bench', level: 'silent' }), lineBound(1 << 20));
  const passwordCheck = 'services/store/network/password-check.ts';
  if (opts.password === undefined || !existsSync(resolve(root, passwordCheck))) return connectStandIn(new StoreServer(options));
  const { PasswordCheck } = await load(passwordCheck);
  const { Secret } = await load('services/shared/secret.ts');
  const socket = connectStandIn(new StoreServer({ ...options, password: new PasswordCheck(new Secret(opts.password)) }));
  socket.emit('data', Buffer.from(`AUTH ${opts.password}\n`));
  await new Promise((r) => setImmediate(r));
  return socket;
}

const base = opts.base ?? fileURLToPath(new URL('..', import.meta.url));
interface Build {
  readonly name: string;
  readonly socket: StandInSocket;
  /** Wall time of its slices so far. */
  ns: number;
}
const builds: [Build, Build] = [
  { name: `base: ${opts.base ?? 'this checkout'}`, socket: await storeOf(resolve(base)), ns: 0 },
  { name: `against: ${opts.against}`, socket: await storeOf(resolve(opts.against)), ns: 0 },
];
const chunks = buildChunks(shape, chunksPerSlice * 8);
// Turns of the event loop between groups of chunks, so replies are written at each turn's
// end as in a real run, and the per-turn command budget (256) is never the limit.
const perTurn = Math.max(1, Math.floor(256 / shape.depth));
const nextTurn = () => new Promise((r) => setImmediate(r));

let offset = 0;
async function slice(socket: StandInSocket): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < chunksPerSlice; i++) {
    socket.emit('data', chunks[(offset + i) % chunks.length]!);
    if (i % perTurn === perTurn - 1) await nextTurn();
  }
  await nextTurn();
  return Number(process.hrtime.bigint() - started);
}

// Warm-up: both builds optimised before anything counts.
for (let w = 0; w < 10; w++) {
  for (const b of builds) await slice(b.socket);
  offset += chunksPerSlice;
}
const ratios: number[] = [];
for (let k = 0; k < slices; k++) {
  const order = k % 2 === 0 ? [builds[0], builds[1]] : [builds[1], builds[0]];
  const took = new Map<string, number>();
  for (const b of order) took.set(b.name, await slice(b.socket));
  offset += chunksPerSlice;
  builds[0].ns += took.get(builds[0].name)!;
  builds[1].ns += took.get(builds[1].name)!;
  ratios.push(took.get(builds[1].name)! / took.get(builds[0].name)!);
}
ratios.sort((a, b) => a - b);
const commands = slices * chunksPerSlice * shape.depth;
const q = (f: number) => ratios[Math.min(ratios.length - 1, Math.floor(f * ratios.length))]!.toFixed(3);
console.log(`depth ${shape.depth}, ${shape.keys} keys, ${shape.valueSize}-byte values, 9:1 GET:SET, ${slices} alternating slices of ${chunksPerSlice * shape.depth} commands`);
for (const b of builds) console.log(`${b.name.padEnd(40)} ${(b.ns / commands).toFixed(1)} ns a command`);
console.log(`against/base: ${(builds[1].ns / builds[0].ns).toFixed(3)} of the totals; slices' median ${q(0.5)} (quartiles ${q(0.25)}-${q(0.75)})`);
process.exit(0);
