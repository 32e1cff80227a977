// The well-behaved client of bench/store-flood.ts, on a thread of its own: a PING (every
// tenth time a USAGE) and a wait for its answer, every 10 ms. On the bench's own thread its
// round trips would also hold the time that thread spends writing the flood (64 MB to 200
// sockets), several times the store's longest turn: see
// docs/benchmarks.md#connection-floods-and-fairness.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const GAP_MS = 10;

export interface ProbeResults {
  /** Each PING's round trip, ms, and when it was sent, ms after start(). */
  readonly pings: readonly { readonly sentAtMs: number; readonly ms: number }[];
  /** Each USAGE's round trip, ms. */
  readonly usages: readonly number[];
}

export interface FloodProber {
  /** Starts the round trips (call it as soon as the flood is written); resolves with them after `durationMs`. */
  run(durationMs: number): Promise<ProbeResults>;
}

/** A prober connected to the store on `port` (resolves once connected). */
export async function startFloodProber(port: number): Promise<FloodProber> {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { floodProber: { port } } });
  const [ready] = (await once(worker, 'message')) as [string];
  if (ready !== 'connected') throw new Error(`flood prober: ${ready}`);
  return {
    async run(durationMs) {
      worker.postMessage(durationMs);
      const [results] = (await once(worker, 'message')) as [ProbeResults];
      await worker.terminate();
      return results;
    },
  };
}

/** One request, one reply line; resolves with the round trip in ms. */
export function roundTrip(s: Socket, line: string): Promise<number> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let got = '';
    const onData = (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\n')) {
        s.off('data', onData);
        resolve(performance.now() - t0);
      }
    };
    s.on('data', onData);
    s.write(line + '\n');
  });
}

async function probe(port: number): Promise<void> {
  const s = connect({ port, host: '127.0.0.1' });
  s.setNoDelay(true);
  try {
    await once(s, 'connect');
  } catch (err) {
    parentPort!.postMessage((err as Error).message);
    return;
  }
  parentPort!.postMessage('connected');
  const [durationMs] = (await once(parentPort!, 'message')) as [number];
  const pings: { sentAtMs: number; ms: number }[] = [];
  const usages: number[] = [];
  const start = performance.now();
  for (let i = 0; performance.now() - start < durationMs; i++) {
    if (i % 10 === 9) usages.push(await roundTrip(s, 'USAGE'));
    else {
      const sentAtMs = performance.now() - start;
      pings.push({ sentAtMs, ms: await roundTrip(s, 'PING') });
    }
    await new Promise((r) => setTimeout(r, GAP_MS));
  }
  s.destroy();
  parentPort!.postMessage({ pings, usages } satisfies ProbeResults);
}

if (!isMainThread && (workerData as { floodProber?: unknown } | undefined)?.floodProber !== undefined) {
  void probe((workerData as { floodProber: { port: number } }).floodProber.port);
}
