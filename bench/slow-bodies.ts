// Stalled request bodies against the backend's memory: N connections each declare a
// MAX_VALUE_BYTES body, send all of it but the last bytes, and stall. The report gives
// the backend's resident memory before and after, and how the connections were answered
// (with BODY_BUFFER_BYTES, those past the budget get 503 at once).
//
//   node bench/slow-bodies.ts                           # 500 connections, the defaults
//   node bench/slow-bodies.ts --connections 200
//   BODY_BUFFER_BYTES=8388608 node bench/slow-bodies.ts # any backend setting from the environment
//
// The store and the backend run as child processes (ports chosen by the OS), killed at
// the end. KVSTACK_ROOT runs another checkout's services (to compare with an older one).
import { connect, type Socket } from 'node:net';
import { numberOption, parseOptions } from './harness/options.ts';
import { scrape } from './harness/scrape.ts';
import { killAll, root as thisCheckout } from './harness/processes.ts';
import { startBackend, startStore } from './harness/services.ts';

const root = process.env.KVSTACK_ROOT ?? thisCheckout;
const values = parseOptions('Usage: node bench/slow-bodies.ts [--connections n] (backend settings from the environment)', { connections: { type: 'string' } });
const connections = numberOption('--connections', values.connections, 500, { min: 1, integer: true });
const VALUE_BYTES = 1024 * 1024;
const HELD_BACK = 1024; // the bytes never sent

process.on('exit', killAll);

async function rssOf(metricsPort: number): Promise<number> {
  return (await scrape(metricsPort)).get('process_resident_memory_bytes')!;
}

const store = await startStore({ env: { STORE_HOST: '127.0.0.1' }, root });
const backend = await startBackend({ env: { KV_STORE: `127.0.0.1:${store.port}` }, root });
const port = backend.port;
const metricsPort = backend.metricsPort!;
const before = await rssOf(metricsPort);

const statuses: Record<string, number> = {};
const sockets: Socket[] = [];
const body = Buffer.alloc(VALUE_BYTES - HELD_BACK, 'x');
await Promise.all(
  Array.from({ length: connections }, (_, i) =>
    new Promise<void>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      sockets.push(socket);
      socket.on('error', () => resolve());
      socket.once('close', () => resolve());
      socket.once('data', (c: Buffer) => {
        const status = c.toString('latin1').split(' ')[1]!;
        statuses[status] = (statuses[status] ?? 0) + 1;
        resolve();
      });
      socket.once('connect', () => {
        socket.write(`PUT /stalled-${i} HTTP/1.1\r\nHost: bench\r\nContent-Length: ${VALUE_BYTES}\r\n\r\n`);
        // Written whole: resolved once the kernel has taken it (the backend has read most of it).
        socket.write(body, () => setTimeout(resolve, 200));
      });
    }),
  ),
);
// Let the backend read what is in flight, then measure while every connection is stalled.
await new Promise((r) => setTimeout(r, 1000));
const after = await rssOf(metricsPort);
const mib = (n: number) => `${(n / 1048576).toFixed(0)} MiB`;
console.log(
  `${connections} connections, each ${mib(VALUE_BYTES)} declared and all but ${HELD_BACK} bytes sent: backend RSS ${mib(before)} before, ${mib(after)} with the bodies stalled; ` +
    `answered at once: ${JSON.stringify(statuses)}, ${connections - Object.values(statuses).reduce((a, b) => a + b, 0)} still waiting`,
);
for (const s of sockets) s.destroy();
process.exit(0);
