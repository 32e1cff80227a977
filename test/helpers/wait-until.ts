/**
 * Polls `probe` until it returns a value (not undefined), for conditions that another
 * system reaches on its own clock (a scrape, a container start). Throws after
 * `deadlineMs` with what it last saw, or at once when `abort()` names a reason.
 */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  { deadlineMs = 60_000, everyMs = 250, abort }: { deadlineMs?: number; everyMs?: number; abort?: () => string | undefined } = {},
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const reason = abort?.();
    if (reason) throw new Error(`gave up waiting for ${what}: ${reason}`);
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** Resolves at the end of this turn of the event loop (setImmediate's check phase), when turn batches are handed over. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
