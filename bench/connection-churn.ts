// Resident memory of a server under a churn of short connections: each connection sends a
// SET and a GET of its own key and goes, in one of four ways in turn:
//   polite       reads both replies, then closes (FIN) and waits for the server's close;
//   reset        reads both replies, then resets (RST);
//   half-closed  sends its commands and its FIN at once, then reads both replies;
//   garbage      sends a line of no command first (an error reply), then the SET and GET.
// The same churn drives the store and a redis-server (inline commands, which Redis takes
// as it takes its own protocol), alternating round by round. Memory and descriptors are
// read from /proc, the same way for both; a connection counts as answered only when every
// reply is the right one.
//
//   node bench/connection-churn.ts [--connections 100000] [--rate 10000] [--in-flight 128]
//        [--rounds 1] [--target store|redis|both] [--built] [--store-node-args '<flags>'] [--settle-ms 10000] [--json]
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { median } from './harness/median.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { openFds, rssOf } from './harness/proc.ts';
import { killChildrenOnExit } from './harness/processes.ts';
import { scrape } from './harness/scrape.ts';
import { redisAvailable, startRedis, startStore, type Service } from './harness/services.ts';

const MiB = 1024 * 1024;
export const CLOSE_KINDS = ['polite', 'reset', 'half-closed', 'garbage'] as const;
export type CloseKind = (typeof CLOSE_KINDS)[number];
export type Target = 'store' | 'redis';

export interface ConnectionChurnOptions {
  readonly connections: number;
  /** Connections opened per second, at most (the loader may fall short: see the report's rate). */
  readonly rate: number;
  /** Connections open at once, at most. */
  readonly inFlight: number;
  /** Idle time after the churn before the last reading. */
  readonly settleMs: number;
  readonly sampleMs: number;
  /** How connections go, taken in turn (default all four). */
  readonly kinds: readonly CloseKind[];
}

export const defaultConnectionChurnOptions: ConnectionChurnOptions = { connections: 100_000, rate: 10_000, inFlight: 128, settleMs: 10_000, sampleMs: 200, kinds: CLOSE_KINDS };

export interface ConnectionChurnResult {
  readonly target: Target;
  readonly answered: number;
  readonly wrong: number;
  /** Connections refused, reset before their replies, or timed out (by kind). */
  readonly failed: Record<CloseKind, number>;
  readonly ratePerSecond: number;
  readonly idleRssBytes: number;
  readonly peakRssBytes: number;
  readonly endRssBytes: number;
  readonly settledRssBytes: number;
  readonly idleFds: number;
  readonly settledFds: number;
  /** The store's JavaScript heap in use at its peak reading (null for Redis). */
  readonly peakHeapUsedBytes: number | null;
}

/** VmRSS and the open descriptors of a process. */
const readProc = (pid: number): { rss: number; fds: number } => ({ rss: rssOf(pid), fds: openFds(pid) });

async function heapUsed(service: Service): Promise<number | null> {
  if (service.metricsPort === undefined) return null;
  return (await scrape(service.metricsPort)).get('nodejs_heap_size_used_bytes') ?? null;
}

/** What a connection sends and the exact replies it must get back, for one target. */
export function exchange(target: Target, kind: CloseKind, key: string, value: string): { send: string; expect: RegExp } {
  const eol = target === 'redis' ? '\r\n' : '\n';
  const garbage = kind === 'garbage' ? `\x01NOT-A-COMMAND \x7f~~${eol}` : '';
  const send = `${garbage}SET ${key} ${value}${eol}GET ${key}${eol}`;
  const b64 = Buffer.from(value).toString('base64');
  const replies =
    target === 'redis'
      ? `${kind === 'garbage' ? '-ERR [^\\r\\n]*\\r\\n' : ''}\\+OK\\r\\n\\$${value.length}\\r\\n${value}\\r\\n`
      : `${kind === 'garbage' ? 'ERROR [^\\n]*\\n' : ''}OK\\nVALUE ${b64.replace(/[+/=]/g, (c) => `\\${c}`)}\\n`;
  return { send, expect: new RegExp(`^${replies}$`) };
}

/** Runs one connection to its end: resolves with whether every reply was right, rejects when it failed. */
function oneConnection(port: number, target: Target, kind: CloseKind, key: string, value: string): Promise<boolean> {
  const { send, expect } = exchange(target, kind, key, value);
  const wanted = send.split('\n').length - 1 + (target === 'redis' ? 1 : 0); // Redis's bulk reply takes two lines
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ port, host: '127.0.0.1' });
    let got = '';
    let lines = 0;
    let settled = false;
    const done = (ok: boolean | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (ok instanceof Error) reject(ok);
      else resolve(ok);
    };
    const timer = setTimeout(() => {
      socket.destroy();
      done(new Error('timed out'));
    }, 10_000);
    socket.setEncoding('latin1');
    socket.on('connect', () => {
      socket.write(send);
      if (kind === 'half-closed') socket.end();
    });
    socket.on('data', (chunk: string) => {
      got += chunk;
      for (const c of chunk) if (c === '\n') lines++;
      if (lines < wanted) return;
      const right = expect.test(got);
      if (kind === 'reset') {
        socket.resetAndDestroy();
        done(right);
      } else if (kind === 'garbage') {
        socket.destroy();
        done(right);
      } else {
        if (kind === 'polite') socket.end();
        // Answered; the connection is over when the server closes its side too.
        socket.once('close', () => done(right));
      }
    });
    socket.on('error', (err) => done(err));
    socket.on('close', () => done(lines >= wanted ? expect.test(got) : new Error('closed before its replies')));
  });
}

/** Drives `o.connections` connections against `service` and reads its memory around them. */
export async function churnConnections(service: Service, target: Target, o: ConnectionChurnOptions, log: (line: string) => void = () => {}): Promise<ConnectionChurnResult> {
  const idle = readProc(service.pid);
  let peak = idle.rss;
  let peakHeap = await heapUsed(service);
  let peakReading = 0;
  const sampler = setInterval(() => {
    const now = readProc(service.pid).rss;
    if (now > peak) {
      peak = now;
      const reading = ++peakReading;
      void heapUsed(service)
        .then((h) => void (reading === peakReading && h !== null && (peakHeap = h)))
        .catch(() => {});
    }
  }, o.sampleMs);
  const failed: Record<CloseKind, number> = { polite: 0, reset: 0, 'half-closed': 0, garbage: 0 };
  let answered = 0;
  let wrong = 0;
  let started = 0;
  let open = 0;
  const freeSlots: number[] = Array.from({ length: o.inFlight }, (_, i) => o.inFlight - 1 - i);
  const begin = performance.now();
  try {
    await new Promise<void>((resolve) => {
      const launch = (): void => {
        // Paced: no more than `rate` connections begun per second since the start.
        const allowed = Math.min(o.connections, Math.floor(((performance.now() - begin) / 1000) * o.rate) + 1);
        while (started < allowed && open < o.inFlight) {
          const i = started++;
          const slot = freeSlots.pop()!;
          const kind = o.kinds[i % o.kinds.length]!;
          open++;
          oneConnection(service.port, target, kind, `churn:${slot}`, `v${i}`)
            .then(
              (right) => void (right ? answered++ : wrong++),
              () => void failed[kind]++,
            )
            .finally(() => {
              open--;
              freeSlots.push(slot);
              if (started === o.connections && open === 0) resolve();
              else launch();
            });
        }
        if (started < o.connections && open < o.inFlight) setTimeout(launch, 1);
      };
      launch();
    });
    const seconds = (performance.now() - begin) / 1000;
    const end = readProc(service.pid);
    log(`${target}: ${o.connections} connections in ${seconds.toFixed(1)} s; RSS idle ${mib(idle.rss)}, peak ${mib(peak)}, at the end ${mib(end.rss)}`);
    await new Promise((r) => setTimeout(r, o.settleMs));
    const settled = readProc(service.pid);
    return {
      target,
      answered,
      wrong,
      failed,
      ratePerSecond: Math.round(o.connections / seconds),
      idleRssBytes: idle.rss,
      peakRssBytes: Math.max(peak, end.rss),
      endRssBytes: end.rss,
      settledRssBytes: settled.rss,
      idleFds: idle.fds,
      settledFds: settled.fds,
      peakHeapUsedBytes: peakHeap,
    };
  } finally {
    clearInterval(sampler);
  }
}

const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;

export function formatChurnResult(r: ConnectionChurnResult): string {
  const failed = Object.entries(r.failed)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const heap = r.peakHeapUsedBytes === null ? '' : `, heap used at the peak ${mib(r.peakHeapUsedBytes)}`;
  return (
    `${r.target.padEnd(5)} ${r.answered} answered right, ${r.wrong} wrong, failed: ${failed || 'none'}; ${r.ratePerSecond} connections/s; ` +
    `RSS idle ${mib(r.idleRssBytes)}, peak ${mib(r.peakRssBytes)} (+${mib(r.peakRssBytes - r.idleRssBytes)}), settled ${mib(r.settledRssBytes)}${heap}; ` +
    `descriptors ${r.idleFds} → ${r.settledFds}`
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  killChildrenOnExit();
  const a = parseOptions(
    'Usage: node bench/connection-churn.ts [--connections N] [--rate N] [--in-flight N] [--rounds N] [--target store|redis|both] [--built] [--store-node-args FLAGS] [--settle-ms MS] [--json]',
    {
      connections: { type: 'string' },
      rate: { type: 'string' },
      'in-flight': { type: 'string' },
      rounds: { type: 'string' },
      target: { type: 'string', default: 'both' },
      built: { type: 'boolean', default: false },
      'store-node-args': { type: 'string', default: '' },
      'settle-ms': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  );
  const d = defaultConnectionChurnOptions;
  const int = (name: string, raw: string | undefined, fallback: number, min = 1): number => numberOption(`--${name}`, raw, fallback, { integer: true, min });
  const o: ConnectionChurnOptions = {
    connections: int('connections', a.connections, d.connections),
    rate: int('rate', a.rate, d.rate),
    inFlight: int('in-flight', a['in-flight'], d.inFlight),
    settleMs: int('settle-ms', a['settle-ms'], d.settleMs, 0),
    sampleMs: d.sampleMs,
    kinds: CLOSE_KINDS,
  };
  const rounds = int('rounds', a.rounds, 1);
  if (!['store', 'redis', 'both'].includes(a.target)) {
    console.error(`--target must be store, redis or both, got ${JSON.stringify(a.target)}`);
    process.exit(2);
  }
  const targets: Target[] = a.target === 'both' ? (redisAvailable() ? ['store', 'redis'] : ['store']) : [a.target as Target];
  if (a.target === 'both' && targets.length === 1) console.error('connection-churn: no redis-server on PATH: the store alone');
  const results: ConnectionChurnResult[] = [];
  for (let round = 0; round < rounds; round++) {
    // Alternating which goes first, so neither always runs on a machine the other just warmed.
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      const service = target === 'store' ? await startStore({ built: a.built, nodeArgs: a['store-node-args'].split(' ').filter(Boolean) }) : await startRedis();
      // An idle second first: the idle reading is the server at rest, not just started.
      await new Promise((r) => setTimeout(r, 2000));
      try {
        const r = await churnConnections(service, target, o, (line) => process.stderr.write(`connection-churn: ${line}\n`));
        results.push(r);
        if (!a.json) console.log(`round ${round + 1}: ${formatChurnResult(r)}`);
      } finally {
        service.kill();
      }
    }
  }
  if (a.json) console.log(JSON.stringify(results));
  else
    for (const target of targets) {
      const mine = results.filter((r) => r.target === target);
      const growth = mine.map((r) => (r.peakRssBytes - r.idleRssBytes) / MiB);
      console.log(
        `${target}: peak RSS over idle, median of ${mine.length}: ${median(growth)!.toFixed(1)} MiB (${Math.min(...growth).toFixed(1)}–${Math.max(...growth).toFixed(1)})`,
      );
    }
}
