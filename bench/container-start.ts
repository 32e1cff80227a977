// What kvstack/testcontainers costs a test: the time from `new KvstackContainer().start()`
// to its return (container created and started, the store's ready line seen), then to
// the first answer of a ready client, and `stop()`; the same for the backend in front of
// a started store. Rounds run one after another; medians and ranges are reported. The
// images are the local ones (kvstack-store:local, kvstack-backend:local): build them first
// (`docker compose build store backend`). Before the rounds one start is not timed, so the
// engine has the image's layers warm as any earlier run of a suite would.
//
//   node bench/container-start.ts [--rounds 7] [--no-backend]
import { performance } from 'node:perf_hooks';
import { KvstackBackendContainer, KvstackContainer } from '../services/testcontainers/index.ts';
import { median } from './harness/median.ts';
import { numberOption, parseOptions } from './harness/options.ts';

const USAGE = 'node bench/container-start.ts [--rounds 7] [--no-backend]';
const options = parseOptions(USAGE, { rounds: { type: 'string' }, backend: { type: 'boolean', default: true } });
const rounds = numberOption('--rounds', options.rounds, 7, { min: 1, integer: true });

const since = (t: number): number => performance.now() - t;
const samples: Record<string, number[]> = { 'store start()': [], 'first answer': [], 'store stop()': [], 'backend start()': [], 'backend stop()': [] };

async function round(timed: boolean): Promise<void> {
  const record = (name: string, ms: number) => timed && samples[name]!.push(ms);
  let t = performance.now();
  const store = await new KvstackContainer().start();
  record('store start()', since(t));
  const client = await store.client();
  await client.ping();
  record('first answer', since(t));
  if (options.backend) {
    t = performance.now();
    const backend = await new KvstackBackendContainer().withStore(store).start();
    record('backend start()', since(t));
    t = performance.now();
    await backend.stop();
    record('backend stop()', since(t));
  }
  t = performance.now();
  await store.stop();
  record('store stop()', since(t));
}

await round(false);
for (let i = 0; i < rounds; i++) await round(true);
console.log(`${rounds} rounds, ms: median (min-max)`);
for (const [name, values] of Object.entries(samples)) {
  if (values.length === 0) continue;
  console.log(`${name.padEnd(16)} ${Math.round(median(values)!)} (${Math.round(Math.min(...values))}-${Math.round(Math.max(...values))})`);
}
