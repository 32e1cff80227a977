// The store's own defaults for V8 flags: each set at start-up (run-store.ts, before the
// engine exists) unless the command line gave the same flag, so an operator's
// `node --flag ... services/store/main.ts` wins.
import { setFlagsFromString } from 'node:v8';

/**
 * Whether `execArgv` names the flag of `flag` (e.g. '--heap-growing-percent=500' or
 * '--no-memory-reducer'): in either spelling (V8 takes - and _ alike), with or without
 * `no-`, with a value after = or none.
 */
export function flagGiven(flag: string, execArgv: readonly string[]): boolean {
  const name = flag.replace(/^--(no-)?/, '').replace(/=.*$/, '');
  const pattern = new RegExp(`^--(no-)?${name.replace(/[-_]/g, '[-_]')}(=|$)`);
  return execArgv.some((arg) => pattern.test(arg));
}

/** Sets V8 flag `flag` now, unless this process's command line gave it (flagGiven); returns whether it did. */
export function defaultV8Flag(flag: string): boolean {
  if (flagGiven(flag, process.execArgv)) return false;
  setFlagsFromString(flag);
  return true;
}

/**
 * V8's heap-growing factor for the store: the next full collection comes when the
 * JavaScript heap has grown to this many percent more than it held after the last. The
 * store's heap is small (~12 MB; its data is off the heap), and with V8's default factor
 * the limit stays closer than the young generation's size, so V8 starts a full collection
 * every few hundred milliseconds under load whatever is allocated. At 200 the heap holds at
 * most ~36 MB between collections, which a load fills only as slowly as the store promotes
 * garbage (~3 MB per 8,000,000 SETs): none comes under a steady load. What fills it is a
 * churn of short connections (~1 KB of each outlives the young generation): at 500 the
 * heap grew to ~90 MB between collections and V8 kept the freed pages, +115–125 MiB of RSS
 * over 100,000 connections, against +51–52 MiB at 200. With the engine's memory in the same
 * limit (below) an 8,000,000-key load starts four full collections at 200, three at 500
 * (docs/benchmarks.md#connection-churn).
 */
export const HEAP_GROWING_PERCENT = 200;

/**
 * The store's defaults, in the order they are set:
 * - the heap-growing factor above;
 * - V8's count of ArrayBuffer memory (all the engine's data) taken into the same limit
 *   as the heap, grown by the same factor, instead of V8's own rule for it: a full
 *   collection each time the count has grown 64 MiB, whether or not anything could be
 *   freed. Under that rule a load of 8,000,000 keys (~1.3 GiB) started ~20 full
 *   collections on the serving thread; with the count in the heap's limit it starts three,
 *   the limit growing with the data. (It replaces a ballast of mapped, never-written buffers
 *   that stood in the count for the growth to come: that cost 60–100 ms of every start at
 *   large caps and a mapping per 32 MiB of the cap.)
 * - V8's memory reducer, off in the isolates made from here on. It starts full
 *   collections on a timer in an isolate that allocates little, to give memory back: here,
 *   the page thread's (page-source.ts), which only hands out buffers; its collections came
 *   in the middle of 8,000,000-key loads (~15 ms each on that thread, a core the serving
 *   thread wants). The flag is read when an isolate is made: the serving isolate, made
 *   before this runs, keeps its reducer, which starts only while the store is idle.
 * - V8's young generation not grown (`--semi-space-growth-factor=1`). V8 doubles it each
 *   time as many bytes have survived its collections as it holds, which a server's steady
 *   load always comes to (a command's objects live for a turn): under a churn of values up
 *   to 64 KiB it went from 1 to 4 MiB a semi-space, 6 MiB more RSS at the peak, none of it
 *   needed. The store makes ~0.3 KB of garbage a command and little of it survives, so a
 *   small young generation costs more, shorter scavenges: depth 1 and depth 16 throughput
 *   and the worst PING of an 8,000,000-key load were the same within the runs' spread
 *   (docs/benchmarks.md#memory-under-churn). It stays the size the isolate starts with,
 *   or the idle collection leaves (1 MiB semi-spaces), under the launch flag's bound
 *   (launch-flags.ts), which holds it where this cannot (V8 still grows it a little when
 *   nearly all of it survives).
 * - V8's bytecode flushing, off. V8 throws away the bytecode (and the type feedback) of a
 *   function that has not run for six full collections: the first connection's path, warm
 *   from start-up, would be parsed and compiled again at the first client's commands after
 *   a load's collections. The store's bytecode is a few MB and stays in use.
 */
export const STORE_V8_DEFAULTS: readonly string[] = [
  `--heap-growing-percent=${HEAP_GROWING_PERCENT}`,
  '--external-memory-accounted-in-global-limit',
  '--no-memory-reducer',
  '--semi-space-growth-factor=1',
  '--no-flush-bytecode',
];

/** Sets the store's V8 defaults (STORE_V8_DEFAULTS) this process's command line does not give; returns those it set, for the ready line. */
export function applyStoreV8Defaults(): string[] {
  return STORE_V8_DEFAULTS.filter((flag) => defaultV8Flag(flag));
}
