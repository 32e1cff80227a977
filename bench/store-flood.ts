// Many clients that pipeline GETs of a 1 KB value and never read their replies, against a
// store started as a child process; meanwhile one well-behaved client, on a thread of its
// own (bench/flood-prober.ts), sends a PING (and every tenth time a USAGE) and waits for
// the answer. Reports the worst and median round trip of that client (when, after the
// flood was written, the worst PING was sent, and the worst of those sent a second or more
// after it), the store's peak RSS, and what the kernel holds for the flooders (the store's
// send queues plus the flooders' receive queues, from `ss`).
//
//   node bench/store-flood.ts [--conns 200] [--gets 20000] [--value-size 1024] [--duration 5] [--store-dir .]
//        [--trace-turns]
//
// --store-dir runs `node services/store/main.ts` from another checkout (to compare builds).
// --trace-turns records the store's event-loop turns over the flood with `perf` (Linux,
// root; bench/turn-trace.ts) and reports them as `turns`: how long the longest were, and
// where their CPU went.
import { connect, type Socket } from 'node:net';
import { numberOption, parseOptions } from './harness/options.ts';
import { processCpuTimes } from './harness/process-cpu.ts';
import { root } from './harness/processes.ts';
import { scrapeText } from './harness/scrape.ts';
import { startStore } from './harness/services.ts';
import { roundTrip, startFloodProber } from './flood-prober.ts';
import { startFloodSampler } from './flood-sampler.ts';
import { rssOf } from './harness/proc.ts';
import { startTurnTrace, turnTraceUnavailable } from './turn-trace.ts';

const opts = parseOptions('Usage: node bench/store-flood.ts [--conns 200] [--gets 20000] [--value-size 1024] [--duration 5] [--store-dir .] [--trace-turns]', {
  conns: { type: 'string' },
  gets: { type: 'string' },
  'value-size': { type: 'string' },
  duration: { type: 'string' },
  'store-dir': { type: 'string', default: root },
  'trace-turns': { type: 'boolean', default: false },
});
const untraceable = opts['trace-turns'] ? turnTraceUnavailable() : undefined;
if (untraceable !== undefined) {
  console.error(`--trace-turns: ${untraceable}`);
  process.exit(2);
}
const conns = numberOption('--conns', opts.conns, 200, { min: 1, integer: true });
const gets = numberOption('--gets', opts.gets, 20_000, { min: 1, integer: true });
const valueSize = numberOption('--value-size', opts['value-size'], 1024, { integer: true });
const durationMs = numberOption('--duration', opts.duration, 5) * 1000;

const store = await startStore({ root: opts['store-dir'], env: { MAX_CONNECTIONS: String(conns + 10) } });
process.on('exit', store.kill);
const { port } = store;
const metricsPort = store.metricsPort!;

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1' });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

const probe = await open();
probe.setNoDelay(true);
await roundTrip(probe, `SET flood:value ${'v'.repeat(valueSize)}`);
const rssBefore = rssOf(store.pid);

const cpuBefore = processCpuTimes(store.pid)!;
const flooders: Socket[] = [];
const burst = Buffer.from('GET flood:value\n'.repeat(gets));
for (let i = 0; i < conns; i++) {
  const s = await open();
  s.on('error', () => {}); // the store may cut a flooder off
  flooders.push(s);
}
const prober = await startFloodProber(port);
const trace = opts['trace-turns'] ? await startTurnTrace(store.pid) : undefined;
// All at once, so the store finds every flooder's commands in the same turns.
for (const s of flooders) s.write(burst);

const sampler = startFloodSampler(store.pid, port);
const { pings: probes, usages } = await prober.run(durationMs);
const pings = probes.map((p) => p.ms);
/** When each PING was sent, ms after the flood was written: whether the worst came with the first reads or later. */
const pingSentAt = probes.map((p) => p.sentAtMs);
const peaks = await sampler.stop();
const turns = await trace?.stop();
const cpuAfter = processCpuTimes(store.pid)!;
const open_ = flooders.filter((s) => !s.destroyed && s.readyState === 'open').length;
const metrics = await scrapeText(metricsPort);
const metric = (name: string) => metrics.split('\n').filter((l) => l.startsWith(name)).join('; ');

const sorted = (a: readonly number[]) => [...a].sort((x, y) => x - y);
const mid = (a: readonly number[]) => sorted(a)[a.length >> 1] ?? 0;
const worst = (a: readonly number[]) => Math.max(0, ...a);
const mib = (n: number) => (n / 1048576).toFixed(1);
console.log(
  JSON.stringify({
    conns,
    getsPerConn: gets,
    valueSize,
    pings: pings.length,
    pingMedianMs: +mid(pings).toFixed(2),
    pingWorstMs: +worst(pings).toFixed(1),
    pingWorstSentAtMs: Math.round(pingSentAt[pings.indexOf(worst(pings))] ?? 0),
    // The flood's first reads (its first turns) apart.
    pingWorstAfter1sMs: +worst(pings.filter((_, i) => pingSentAt[i]! >= 1000)).toFixed(1),
    usageWorstMs: +worst(usages).toFixed(1),
    rssBeforeMiB: +mib(rssBefore),
    rssPeakMiB: +mib(peaks.rss),
    kernelSendQMiB: +mib(peaks.sendQ),
    kernelRecvQMiB: +mib(peaks.recvQ),
    kernelPerConnKiB: Math.round((peaks.sendQ + peaks.recvQ) / conns / 1024),
    storeUserCpuS: +(cpuAfter.user - cpuBefore.user).toFixed(2),
    storeSysCpuS: +(cpuAfter.system - cpuBefore.system).toFixed(2),
    floodersStillOpen: open_,
    gets: metric('kvstore_commands_total{command="GET",result="ok"}'),
    sent: metric('kvstore_network_sent_bytes_total'),
    disconnects: metric('kvstore_output_limit_disconnects_total'),
    turns,
  }),
);
for (const s of flooders) s.destroy();
probe.destroy();
// A graceful stop, so a profile asked for with NODE_OPTIONS=--cpu-prof gets written.
await store.stop('SIGTERM', 10_000);
process.exit(0);
