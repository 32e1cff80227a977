import type { UsageProbe } from '../shared/admin-app.ts';

export interface StoreMonitorOptions {
  readonly probe: UsageProbe;
  /** Told the outcome of every probe: the usage in bytes, or undefined when it failed. */
  readonly onResult: (usage: number | undefined) => void;
  /** SPEC §3: every 5 s. */
  readonly intervalMs?: number;
}

export interface StoreMonitor {
  /** Resolves after the next probe has reported (for tests and start-up). */
  nextResult(): Promise<number | undefined>;
  /** Stops the timer and waits for a probe in flight; nothing is reported afterwards (waiters get undefined). */
  close(): Promise<void>;
}

/**
 * Runs `probe` now and then every `intervalMs` (the backend's probe asks every shard and
 * records kvbackend_store_up{shard} and kvbackend_store_usage_bytes{shard}). Probes never
 * overlap; the timer does not keep the process alive.
 */
export function startStoreMonitor({ probe, onResult, intervalMs = 5000 }: StoreMonitorOptions): StoreMonitor {
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let waiters: ((usage: number | undefined) => void)[] = [];

  const run = (): void => {
    timer = undefined;
    inFlight = probe().then(
      (usage) => usage,
      () => undefined,
    ).then((usage) => {
      inFlight = undefined;
      if (closed) return;
      onResult(usage);
      const woken = waiters;
      waiters = [];
      for (const w of woken) w(usage);
      timer = setTimeout(run, intervalMs);
      timer.unref();
    });
  };
  run();

  return {
    nextResult: () => (closed ? Promise.resolve(undefined) : new Promise((resolve) => waiters.push(resolve))),
    async close() {
      closed = true;
      clearTimeout(timer);
      await inFlight;
      for (const w of waiters.splice(0)) w(undefined);
    },
  };
}
