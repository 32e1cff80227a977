// What bench/store-flood.ts samples while the flood runs: the store's peak RSS and what the
// kernel queues on the flooders' connections, every 200 ms, on a thread of its own. `ss`
// takes milliseconds: run on the bench's own thread it would hold up the probe's round
// trips, which would then be timed as the store's (docs/benchmarks.md#connection-floods-and-fairness).
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { rssOf } from './harness/proc.ts';

const SAMPLE_MS = 200;

/** Bytes queued in the kernel on the connections to `port`: the server's send queues and the clients' receive queues. */
function kernelQueued(port: number): { sendQ: number; recvQ: number } {
  const out = execFileSync('ss', ['-tnH', 'state', 'established', `( sport = :${port} or dport = :${port} )`], { encoding: 'utf8' });
  let sendQ = 0;
  let recvQ = 0;
  for (const line of out.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const [rq, sq, local] = [Number(f[0]), Number(f[1]), f[2]!];
    if (local.endsWith(`:${port}`)) sendQ += sq;
    else recvQ += rq;
  }
  return { sendQ, recvQ };
}

export interface FloodPeaks {
  readonly rss: number;
  /** The sample with the most bytes queued in all (send plus receive). */
  readonly sendQ: number;
  readonly recvQ: number;
}

/** Samples process `pid` and the connections to `port` until stop(), which takes a last sample and resolves with the peaks. */
export function startFloodSampler(pid: number, port: number): { stop(): Promise<FloodPeaks> } {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { floodSampler: { pid, port } } });
  return {
    async stop() {
      worker.postMessage('stop');
      const [peaks] = (await once(worker, 'message')) as [FloodPeaks];
      await worker.terminate();
      return peaks;
    },
  };
}

if (!isMainThread && (workerData as { floodSampler?: unknown } | undefined)?.floodSampler !== undefined) {
  const { pid, port } = (workerData as { floodSampler: { pid: number; port: number } }).floodSampler;
  let rss = 0;
  let kernel = { sendQ: 0, recvQ: 0 };
  const sample = (): void => {
    rss = Math.max(rss, rssOf(pid));
    const k = kernelQueued(port);
    if (k.sendQ + k.recvQ > kernel.sendQ + kernel.recvQ) kernel = k;
  };
  const timer = setInterval(sample, SAMPLE_MS);
  parentPort!.once('message', () => {
    clearInterval(timer);
    sample(); // the state at the stop is a sample too
    parentPort!.postMessage({ rss, ...kernel } satisfies FloodPeaks);
  });
}
