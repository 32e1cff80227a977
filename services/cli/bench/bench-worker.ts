// One worker thread of `kv bench --threads N`: its share of the connections, driven
// by the same load generator over the same protocol (imported from the module the job
// names); it reports its phases and posts its result back.
import { parentPort, workerData } from 'node:worker_threads';
import type { BenchProtocol } from './bench-protocol.ts';
import type { WorkerJob, WorkerMessage } from './bench-runner.ts';
import { LoadGenerator, type PhaseResult } from './load-generator.ts';

const job = workerData as WorkerJob;
const port = parentPort!;
const post = (m: WorkerMessage) => port.postMessage(m);
const { benchProtocol } = (await import(job.protocolModule)) as { benchProtocol: BenchProtocol };
const gen = new LoadGenerator({ ...job.load, protocol: benchProtocol });
gen.progressCell = new Float64Array(job.progress);
gen.progressIndex = job.index;

try {
  await gen.connect();
  post({ type: 'ready' });
  await new Promise<void>((resolve) => port.once('message', () => resolve()));
  let warmup: PhaseResult | null = null;
  if (job.warmupSec > 0) {
    post({ type: 'phase', name: 'warmup' });
    warmup = await gen.load({ seconds: job.warmupSec, record: false });
  }
  post({ type: 'phase', name: 'measure' });
  const { histogram, ...measure } = await gen.load({ requests: job.requests, seconds: job.durationSec, record: true });
  const data = histogram!.toData();
  port.postMessage({ type: 'result', warmup: warmup && { ...warmup, histogram: undefined }, measure: { ...measure, histogram: data } } satisfies WorkerMessage, [data.counts.buffer as ArrayBuffer]);
} catch (err) {
  post({ type: 'error', message: err instanceof Error ? err.message : String(err) });
} finally {
  gen.close();
}
