import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { pipelineLines } from '../../client/line-pipeline.ts';
import type { EvictionPolicy } from '../../config/config.ts';
import type { Logger } from '../../shared/logger.ts';
import { KvEngine } from '../engine/kv-engine.ts';
import { StoreMetrics } from '../store-metrics.ts';
import type { SocketIo } from '../network/native-io.ts';
import type { PageSource } from '../engine/page-source.ts';
import { StoreServer } from '../network/tcp-server.ts';

/**
 * Runs the store's command path once before the store exists, so its first clients do
 * not wait for V8 to compile it.
 *
 * A fresh process runs its first commands in V8's interpreter: each function is compiled
 * on its first call, runs unoptimised for thousands more, and every optimisation that
 * guessed wrong is thrown away (`--trace-deopt` at the start of a load lists the framer,
 * the parser, the engine's lookup and the arena's writes). None of that can be cut into
 * slices, and it showed as the store's worst round trips in the first ~200 ms of a load.
 *
 * So a scratch engine and server, made from the same classes with the same cap, policy and
 * page source, serve SETs, GETs and DELETEs pipelined over two loopback connections first,
 * and some GETs one at a time, then the SETs and GETs again. V8's type feedback and
 * optimised code belong to the functions, not to the objects, so the real engine and
 * server start with them. The scratch engine is made before the real one on purpose: V8
 * settles its objects' layout (their hidden class) on the scratch objects, and the real
 * ones are then made with the settled layout; warmed after the real engine exists, the
 * same warm-up makes the first seconds of a load worse, as V8 throws the real engine's
 * code away (docs/benchmarks.md#pauses-during-growth). What the warm-up does not see still
 * costs the first clients: an object of a kind the scratch store never made, a field it
 * never changed.
 *
 * Nothing of the scratch store is seen outside this call: its metrics are its own and
 * registered nowhere, its port is on loopback and closed before the store listens, and
 * its engine is dropped. A warm-up that fails (no loopback, say) is reported, not thrown:
 * the store then starts cold, and serves as it would otherwise, only slower at first.
 */

/** As a pipelining client sends lines: 256 per write, two writes in flight per connection. */
const PIPELINED = { batch: 256, writesInFlight: 2 };
/** As a client that waits for each reply does. */
const ONE_AT_A_TIME = { batch: 1, writesInFlight: 1 };
/**
 * GETs sent one at a time, as a client that waits for each reply sends them: a read of one
 * command takes a path of its own (held to the end of the turn, OneLineReads). Capped, as
 * each is a round trip: 500 take ~30-40 ms.
 */
export const ONE_AT_A_TIME_KEYS = 500;
const CONNECTIONS = 2;
/** The commands a warm-up of `keys` keys sends: SETs, GETs pipelined and one at a time, DELETEs, and the SETs and GETs again. */
export const warmupCommands = (keys: number): number => 5 * keys + Math.min(keys, ONE_AT_A_TIME_KEYS);
/** The longest a warm-up may take (20,000 keys take ~0.5 s): past it the store starts cold rather than late. */
export const WARMUP_TIMEOUT_MS = 10_000;
/** Value sizes written in turn (bytes, at most MAX_VALUE_BYTES): small, typical, and one past the inline base64 bound. */
const VALUE_SIZES = [16, 100, 100, 100, 700] as const;

export interface WarmupOptions {
  /** Keys written, read and deleted; 0 = no warm-up. */
  readonly keys: number;
  /** The real engine's cap and policy, so the scratch engine's fields have the same kinds of values. */
  readonly maxMemoryBytes: number;
  readonly evictionPolicy: EvictionPolicy;
  readonly maxValueBytes: number;
  readonly maxLineBytes: number;
  readonly logger: Logger;
  /** The native socket I/O the real server uses, so its code is warmed too. */
  readonly socketIo?: SocketIo | undefined;
  /**
   * Where the real engine's pages come from; the scratch engine takes its pages there too.
   * Warmed on the serving thread's own pages instead, the source's code was compiled at a
   * load's first writes and the arena's page allocation was optimised for a source of
   * another class; with the page thread the first page of each size also waited for a
   * round trip to it, and this way the next page of each size the warm-up used is already
   * held ahead for the real engine (docs/benchmarks.md#pauses-during-growth).
   */
  readonly pageSource?: PageSource | undefined;
  /** Where the scratch listener binds (a test gives an address that cannot be bound). */
  readonly host?: string;
  /** Default WARMUP_TIMEOUT_MS (a test gives less). */
  readonly timeoutMs?: number;
}

export interface WarmupResult {
  /** Commands the scratch store answered (warmupCommands(keys) when it ran to the end). */
  readonly commands: number;
  readonly ms: number;
  /** Why it stopped early, when it did. */
  readonly error?: string;
}

/** Drives a scratch store through options.keys SETs, GETs and DELETEs; resolves when all are answered, or with `error`. */
export async function warmUpCommandPath(options: WarmupOptions): Promise<WarmupResult> {
  const started = performance.now();
  if (options.keys === 0) return { commands: 0, ms: 0 };
  let commands = 0;
  let server: StoreServer | undefined;
  const sockets: Socket[] = [];
  let timedOut = false;
  // Aborting a connect, or ending the connections, makes what waits on them below fail,
  // which ends the warm-up.
  const timeout = new AbortController();
  const timer = setTimeout(() => {
    timedOut = true;
    timeout.abort();
    for (const socket of sockets) socket.destroy();
  }, options.timeoutMs ?? WARMUP_TIMEOUT_MS);
  try {
    const engine = new KvEngine({ maxMemoryBytes: options.maxMemoryBytes, evictionPolicy: options.evictionPolicy, pageSource: options.pageSource });
    server = new StoreServer({
      engine,
      metrics: new StoreMetrics(),
      logger: options.logger,
      maxValueBytes: options.maxValueBytes,
      maxLineBytes: options.maxLineBytes,
      maxConnections: CONNECTIONS,
      idleTimeoutMs: 0,
      outputStallTimeoutMs: 0,
      evictionPolicy: options.evictionPolicy,
      socketIo: options.socketIo,
    });
    const host = options.host ?? '127.0.0.1';
    const port = await server.listen(0, host);
    for (let i = 0; i < CONNECTIONS; i++) {
      const socket = connect({ port, host, noDelay: true });
      sockets.push(socket);
      await once(socket, 'connect', { signal: timeout.signal });
    }
    const values = VALUE_SIZES.map((n) => 'w'.repeat(Math.min(n, options.maxValueBytes)));
    const key = (i: number): string => `warmup:${i}`;
    const set = (i: number): string => `SET ${key(i)} ${values[i % values.length]}\n`;
    const get = (i: number): string => `GET ${key(i)}\n`;
    const phases = [
      { line: set, keys: options.keys, pipeline: PIPELINED },
      { line: get, keys: options.keys, pipeline: PIPELINED },
      { line: get, keys: Math.min(options.keys, ONE_AT_A_TIME_KEYS), pipeline: ONE_AT_A_TIME },
      { line: (i: number) => `DELETE ${key(i)}\n`, keys: options.keys, pipeline: PIPELINED },
      // Written and read again after the deletes. V8 optimises the insert path for what it
      // has seen, and before any delete the engine's free list is always empty, which it
      // took for a constant: the first delete threw that code away. Ending on the deletes,
      // the warm-up left the real engine an insert path to compile again, on V8's threads
      // while the first clients' writes waited (a load's worst round trips fell in its first
      // 100 ms). Written again, the keys take the freed slots, and what V8 builds then holds
      // for both.
      { line: set, keys: options.keys, pipeline: PIPELINED },
      { line: get, keys: options.keys, pipeline: PIPELINED },
    ];
    const answered = (): void => void commands++;
    for (const { line, keys, pipeline } of phases) {
      // The connections take the phase's lines in turn, each key's line once.
      let i = 0;
      const next = (): string | undefined => (i < keys ? line(i++) : undefined);
      await Promise.all(sockets.map((socket) => pipelineLines(socket, next, { ...pipeline, onReply: answered })));
    }
    return { commands, ms: performance.now() - started };
  } catch (err) {
    const error = timedOut ? `timed out after ${options.timeoutMs ?? WARMUP_TIMEOUT_MS} ms` : err instanceof Error ? err.message : String(err);
    return { commands, ms: performance.now() - started, error };
  } finally {
    clearTimeout(timer);
    for (const socket of sockets) socket.destroy();
    server?.destroy();
  }
}

