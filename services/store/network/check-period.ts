/** The longest a periodic check of time-outs waits: a connection goes at most this late. */
const CHECK_MAX_MS = 1000;

/**
 * How often to check for time-outs as short as `timeoutMs`: a quarter of it, at least once
 * a second (as Redis's clientsCron checks its clients), and never more often than every ms.
 * A timer per connection would be an object per connection; one check for all is not.
 */
export function checkPeriodMs(timeoutMs: number): number {
  return Math.max(1, Math.min(CHECK_MAX_MS, timeoutMs / 4));
}
