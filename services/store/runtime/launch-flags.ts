// The Node flags the store's process is started with. V8 sizes its heap as the process
// starts, before any of the store's code runs, so these cannot be set from inside the way
// run-store.ts sets the flags V8 reads later: every launcher of the store passes them (the
// image's CMD, `npm run start:store`, `npm start`, the test and bench harnesses), and
// tests hold the image (observability-config) and package.json (launch-flags) to this list. A store started
// without one says so in a warning and in its ready line (`nodeFlagsMissing`).
import { flagGiven } from './v8-flag-defaults.ts';

/**
 * --max-semi-space-size=4: a young generation of at most 2 × 4 MiB. V8 grows it (up to
 * 2 × 64 MiB on a large machine) while much of what it allocates survives a scavenge, and
 * keeps it: the warm-up alone left 16 MiB, and a churn of short connections, each of which
 * outlives a scavenge or two through Node's socket handles, grew it to 64 MiB and more. The
 * store's commands make little garbage: under load a scavenge comes every second or two
 * either way, and an 8,000,000-key load runs with the same number of collections and no
 * full one (docs/benchmarks.md#connection-churn).
 *
 * --memory-balancer: V8's memory balancer sets the old generation's limit after each full
 * collection to the live size plus a margin from the old generation's allocation rate and
 * the collector's speed (at least 2 MB), instead of three times the live size (the store's
 * heap-growing factor, v8-flag-defaults.ts). The store promotes little and steadily (what
 * outlives a scavenge is a few bytes a command), so the next full collection comes after a
 * few MB, not once the heap has tripled: under a churn of values up to 64 KiB at a 64 MiB
 * cap the heap grew ~0.25 MB/s with no full collection until idle (+4 MiB of RSS at the
 * peak of a 20-s churn, more the longer it lasts); with the balancer it stays within ~2 MB
 * of its live size. The engine's memory (ArrayBuffers, counted in the global limit) keeps
 * the factor's part of the limit, so a load starts no more full collections than before
 * (docs/benchmarks.md#memory-under-churn). A launch flag: V8 makes the balancer as the heap
 * is set up, and setting it later crashes the process.
 */
export const STORE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--memory-balancer'];

/** The launch flags `execArgv` lacks (a flag given with another value counts as given: the operator's choice). */
export function missingLaunchFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return STORE_NODE_FLAGS.filter((flag) => !flagGiven(flag, execArgv));
}
