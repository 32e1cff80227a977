// `npm run soak`: a bounded mixed load through the HTTP backend and straight to the store,
// with a verifier that checks every read against what was written, then a report of
// throughput, errors by kind, resident memory of both services over time, and every data
// mismatch. Exits 1 if any read returned data that was never written (or lost data that
// was acknowledged), or if a service died; 0 otherwise.
//
// The store and the backend run as child processes of this script (ports chosen by the
// OS), killed when it exits, also on an error or Ctrl-C. Each key has exactly one writer
// (keys are partitioned per worker), so the verifier knows the value every read must see:
// the last acknowledged write, or, after a write whose answer was lost (an error or a
// time-out), either that write or the one before it; the next read settles which.
//
//   npm run soak                      # 3 minutes
//   npm run soak -- --duration 60     # seconds
//   npm run soak -- --help
import { randomBytes, randomInt } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { StoreConnection, StoreReplyError, errorKind } from '../services/client/index.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { scrape as scrapeMetrics } from './harness/scrape.ts';
import { startBackend, startStore, type Service } from './harness/services.ts';
import { formatSoakReport, mib, type MemorySample, type PathStats, type SoakOptions, type SoakReport } from './soak-report.ts';
import { Verifier } from './soak-verifier.ts';


const HELP = `Usage: npm run soak -- [options]

  --duration <s>        seconds of load (default 180)
  --http-workers <n>    sequential HTTP clients through the backend (default 16)
  --tcp-workers <n>     client-library connections straight to the store (default 4)
  --tcp-depth <n>       commands each TCP worker keeps in flight, on distinct keys (default 8)
  --keys <n>            keys owned by each worker (default 200)
  --sample <s>          seconds between progress lines and memory samples (default 10)
  --json                print the report as JSON instead of text
`;

export const defaultSoakOptions: SoakOptions = {
  durationSec: 180,
  httpWorkers: 16,
  tcpWorkers: 4,
  tcpDepth: 8,
  keysPerWorker: 200,
  sampleEverySec: 10,
};

/** Largest value written (2% of writes), and the cap the store runs with: eviction must be impossible. */
const BIG_VALUE_BYTES = 64 * 1024;
const STORE_MAX_MEMORY_BYTES = 1024 ** 3;
/** Long enough that no key written with a TTL expires during any soak. */
const TTL_SECONDS = 1_000_000;

/** A value of any bytes but the ones the path cannot carry (HTTP: CR and LF; the line protocol: LF, and CR at the end). */
function randomValue(forHttp: boolean): Buffer {
  const r = Math.random();
  const size = r < 0.8 ? randomInt(0, 257) : r < 0.98 ? randomInt(1024, 8193) : BIG_VALUE_BYTES;
  const v = randomBytes(size);
  for (let i = 0; i < v.length; i++) {
    if (v[i] === 0x0a || (forHttp && v[i] === 0x0d)) v[i] = 0x20;
  }
  if (v.length > 0 && v[v.length - 1] === 0x0d) v[v.length - 1] = 0x2e;
  return v;
}

// ---------------------------------------------------------------- load

interface Outcome {
  status?: number;
  body?: Buffer;
  error?: string;
}

function httpCall(agent: Agent, port: number, method: string, path: string, body?: Buffer): Promise<Outcome> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'Content-Length': String(body.length), 'Content-Type': 'application/octet-stream' };
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end(body);
  });
}

function newStats(): PathStats {
  return { ops: 0, reads: 0, writes: 0, deletes: 0, verified: 0, latenciesMs: [] };
}

/** Keeps at most this many latency samples per path (a uniform reservoir), so memory stays flat. */
const LATENCY_SAMPLES = 100_000;

function recordLatency(stats: PathStats, ms: number): void {
  stats.ops++;
  const l = stats.latenciesMs;
  if (l.length < LATENCY_SAMPLES) l.push(ms);
  else {
    const i = randomInt(0, stats.ops);
    if (i < LATENCY_SAMPLES) l[i] = ms;
  }
}

async function scrape(port: number): Promise<Map<string, number>> {
  try {
    return await scrapeMetrics(port);
  } catch {
    return new Map(); // a dead service: reported through servicesAlive
  }
}

/** Runs the soak and returns the report; the children are stopped whatever happens. */
export async function runSoak(options: Partial<SoakOptions> = {}): Promise<SoakReport> {
  const o: SoakOptions = { ...defaultSoakOptions, ...options };
  const log = o.log ?? ((line: string) => process.stderr.write(`soak: ${line}\n`));
  const totalKeys = (o.httpWorkers + o.tcpWorkers) * o.keysPerWorker;
  if (totalKeys * (BIG_VALUE_BYTES + 64) >= STORE_MAX_MEMORY_BYTES) {
    throw new Error(`${totalKeys} keys of up to ${BIG_VALUE_BYTES} bytes could fill the store: eviction would make reads unverifiable`);
  }

  const services: Service[] = [];
  const cleanup = (): void => services.forEach((s) => s.kill());
  process.once('exit', cleanup);
  const agent = new Agent({ keepAlive: true, maxSockets: o.httpWorkers });
  const connections: StoreConnection[] = [];
  try {
    // Detached: each its own process group, so a kill takes anything it started too.
    const store = await startStore({ env: { MAX_MEMORY_BYTES: String(STORE_MAX_MEMORY_BYTES) }, detached: true });
    services.push(store);
    const backend = await startBackend({ env: { KV_STORE: `127.0.0.1:${store.port}` }, detached: true });
    services.push(backend);
    log(`store on 127.0.0.1:${store.port} (pid ${store.child.pid}), backend on 127.0.0.1:${backend.port} (pid ${backend.child.pid})`);
    log(`${o.durationSec} s: ${o.httpWorkers} HTTP workers, ${o.tcpWorkers} TCP workers × ${o.tcpDepth} in flight, ${o.keysPerWorker} keys each`);

    const verifier = new Verifier();
    const http = newStats();
    const tcp = newStats();
    const errors: Record<string, number> = {};
    const error = (kind: string): void => void (errors[kind] = (errors[kind] ?? 0) + 1);
    const memory: MemorySample[] = [];
    const started = performance.now();
    const deadline = started + o.durationSec * 1000;
    const running = () => performance.now() < deadline && store.alive() && backend.alive();

    const sample = async (): Promise<void> => {
      const [s, b] = await Promise.all([scrape(store.metricsPort!), scrape(backend.metricsPort!)]);
      memory.push({
        atSec: Math.round((performance.now() - started) / 1000),
        storeRssBytes: s.get('process_resident_memory_bytes') ?? 0,
        backendRssBytes: b.get('process_resident_memory_bytes') ?? 0,
        storeHeapUsedBytes: s.get('nodejs_heap_size_used_bytes') ?? 0,
        backendHeapUsedBytes: b.get('nodejs_heap_size_used_bytes') ?? 0,
        storeExternalBytes: s.get('nodejs_external_memory_bytes') ?? 0,
        backendExternalBytes: b.get('nodejs_external_memory_bytes') ?? 0,
        storeUsageBytes: s.get('kvstore_usage_bytes') ?? 0,
        storeKeys: s.get('kvstore_keys') ?? 0,
      });
    };
    await sample();

    // -- HTTP workers: GET (checked), PUT (sometimes with ?ttl), DELETE, PUT then GET.
    const httpKey = (w: number, i: number) => `soak:h${w}:${i}`;
    const httpWorker = async (w: number): Promise<void> => {
      while (running()) {
        const key = httpKey(w, randomInt(0, o.keysPerWorker));
        const r = Math.random();
        const t0 = performance.now();
        if (r < 0.45) {
          const res = await httpCall(agent, backend.port, 'GET', `/${key}`);
          recordLatency(http, performance.now() - t0);
          http.reads++;
          if (res.status === 200 || res.status === 404) {
            if (verifier.read(key, res.status === 200 ? res.body! : null, 'http GET')) http.verified++;
          } else error(`http GET ${res.status ?? res.error}`);
        } else if (r < 0.9) {
          const value = randomValue(true);
          const ttl = Math.random() < 0.2 ? `?ttl=${TTL_SECONDS}` : '';
          const res = await httpCall(agent, backend.port, Math.random() < 0.5 ? 'PUT' : 'POST', `/${key}${ttl}`, value);
          recordLatency(http, performance.now() - t0);
          http.writes++;
          if (res.status === 204) verifier.acknowledged(key, value);
          else {
            verifier.uncertain(key, value);
            error(`http PUT ${res.status ?? res.error}`);
          }
          if (res.status === 204 && r > 0.8) {
            // Read your own write at once, through the same path.
            const check = await httpCall(agent, backend.port, 'GET', `/${key}`);
            http.reads++;
            if (check.status === 200 || check.status === 404) {
              if (verifier.read(key, check.status === 200 ? check.body! : null, 'http GET after PUT')) http.verified++;
            } else error(`http GET ${check.status ?? check.error}`);
          }
        } else {
          const res = await httpCall(agent, backend.port, 'DELETE', `/${key}`);
          recordLatency(http, performance.now() - t0);
          http.deletes++;
          if (res.status === 204) verifier.acknowledged(key, null);
          else {
            verifier.uncertain(key, null);
            error(`http DELETE ${res.status ?? res.error}`);
          }
        }
      }
    };

    // -- TCP workers: the client library straight to the store, several keys in flight at once.
    const tcpKey = (w: number, i: number) => `soak:t${w}:${i}`;
    const tcpOne = async (conn: StoreConnection, key: string): Promise<void> => {
      const r = Math.random();
      const t0 = performance.now();
      const fail = (err: unknown, op: string): void => {
        error(`tcp ${op} ${err instanceof StoreReplyError ? `ERROR ${err.reason}` : errorKind(err)}`);
      };
      if (r < 0.4) {
        tcp.reads++;
        try {
          const got = await conn.get(key);
          recordLatency(tcp, performance.now() - t0);
          if (verifier.read(key, got, 'tcp GET')) tcp.verified++;
        } catch (err) {
          fail(err, 'GET');
        }
      } else if (r < 0.8) {
        const value = randomValue(false);
        tcp.writes++;
        try {
          await conn.set(key, value, Math.random() < 0.2 ? TTL_SECONDS : undefined);
          recordLatency(tcp, performance.now() - t0);
          verifier.acknowledged(key, value);
        } catch (err) {
          verifier.uncertain(key, value);
          fail(err, 'SET');
        }
      } else if (r < 0.88) {
        tcp.deletes++;
        try {
          await conn.del(key);
          recordLatency(tcp, performance.now() - t0);
          verifier.acknowledged(key, null);
        } catch (err) {
          verifier.uncertain(key, null);
          fail(err, 'DELETE');
        }
      } else if (r < 0.94) {
        // TTL: present keys answer -1 or a count of seconds, absent ones NOT_FOUND.
        tcp.reads++;
        try {
          const ttl = await conn.ttl(key);
          recordLatency(tcp, performance.now() - t0);
          const s = verifier.state(key);
          if (s.possible.length === 0) {
            const present = s.value !== null;
            if (present !== (ttl !== null) || (ttl !== null && ttl !== -1 && !(ttl >= 1 && ttl <= TTL_SECONDS))) {
              verifier.mismatches.push({ key, via: 'tcp TTL', expected: present ? 'a TTL' : 'NOT_FOUND', got: String(ttl) });
            } else tcp.verified++;
          }
        } catch (err) {
          fail(err, 'TTL');
        }
      } else {
        // EXPIRE far in the future: OK for a present key, NOT_FOUND for an absent one; the value stays.
        tcp.writes++;
        try {
          const existed = await conn.expire(key, TTL_SECONDS);
          recordLatency(tcp, performance.now() - t0);
          const s = verifier.state(key);
          if (s.possible.length === 0 && existed !== (s.value !== null)) {
            verifier.mismatches.push({ key, via: 'tcp EXPIRE', expected: s.value !== null ? 'OK' : 'NOT_FOUND', got: existed ? 'OK' : 'NOT_FOUND' });
          }
        } catch (err) {
          fail(err, 'EXPIRE');
        }
      }
    };
    const tcpWorker = async (w: number): Promise<void> => {
      const conn = new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 5000 });
      connections.push(conn);
      const lanes = Math.min(o.tcpDepth, o.keysPerWorker);
      // Lane j owns the keys i ≡ j (mod lanes): in-flight commands never share a key.
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          while (running()) {
            const i = lane + lanes * randomInt(0, Math.ceil((o.keysPerWorker - lane) / lanes));
            await tcpOne(conn, tcpKey(w, i));
          }
        }),
      );
    };

    // -- progress and memory samples
    let lastOps = 0;
    let lastAt = started;
    const ticker = setInterval(() => {
      void sample().then(() => {
        const now = performance.now();
        const ops = http.ops + tcp.ops;
        const m = memory.at(-1)!;
        const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
        log(
          `${Math.round((now - started) / 1000)} s: ${Math.round(((ops - lastOps) * 1000) / (now - lastAt))} ops/s, ` +
            `errors ${errorCount}, mismatches ${verifier.mismatches.length}, ` +
            `rss store ${mib(m.storeRssBytes)} backend ${mib(m.backendRssBytes)}, usage ${mib(m.storeUsageBytes)} (${m.storeKeys} keys)`,
        );
        lastOps = ops;
        lastAt = now;
      });
    }, o.sampleEverySec * 1000);
    try {
      await Promise.all([
        ...Array.from({ length: o.httpWorkers }, (_, w) => httpWorker(w)),
        ...Array.from({ length: o.tcpWorkers }, (_, w) => tcpWorker(w)),
      ]);
    } finally {
      clearInterval(ticker);
    }
    const seconds = (performance.now() - started) / 1000;
    await sample();

    // -- final pass: every key the load touched, through both paths; HTTP keys must match
    // byte for byte in the store too.
    let finalKeysChecked = 0;
    const servicesAlive = store.alive() && backend.alive();
    if (servicesAlive) {
      const direct = new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 10_000 });
      connections.push(direct);
      for (const key of verifier.keys.keys()) {
        const viaStore = await direct.get(key);
        verifier.read(key, viaStore, 'final tcp GET');
        if (key.startsWith('soak:h')) {
          const res = await httpCall(agent, backend.port, 'GET', `/${key}`);
          if (res.status === 200 || res.status === 404) verifier.read(key, res.status === 200 ? res.body! : null, 'final http GET');
          else error(`http GET ${res.status ?? res.error}`);
        }
        finalKeysChecked++;
      }
    }
    const evictions = (await scrape(store.metricsPort!)).get('kvstore_evictions_total') ?? 0;

    return {
      options: o,
      seconds,
      http,
      tcp,
      errors,
      mismatches: verifier.mismatches,
      memory,
      finalKeysChecked,
      evictions,
      servicesAlive,
    };
  } finally {
    agent.destroy();
    for (const c of connections) c.destroy();
    await Promise.all(services.map((s) => s.stop()));
    process.off('exit', cleanup);
  }
}

// ---------------------------------------------------------------- command line

if (import.meta.main) {
  const values = parseOptions(HELP, {
    duration: { type: 'string' },
    'http-workers': { type: 'string' },
    'tcp-workers': { type: 'string' },
    'tcp-depth': { type: 'string' },
    keys: { type: 'string' },
    sample: { type: 'string' },
    json: { type: 'boolean' },
  });
  const num = (name: string, raw: string | undefined, fallback: number, min: number): number => numberOption(`--${name}`, raw, fallback, { min });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\nsoak: interrupted (${signal})\n`);
      process.exit(130); // the 'exit' handler kills the services
    });
  }
  const d = defaultSoakOptions;
  const report = await runSoak({
    durationSec: num('duration', values.duration, d.durationSec, 1),
    httpWorkers: num('http-workers', values['http-workers'], d.httpWorkers, 0),
    tcpWorkers: num('tcp-workers', values['tcp-workers'], d.tcpWorkers, 0),
    tcpDepth: num('tcp-depth', values['tcp-depth'], d.tcpDepth, 1),
    keysPerWorker: num('keys', values.keys, d.keysPerWorker, 1),
    sampleEverySec: num('sample', values.sample, d.sampleEverySec, 1),
  });
  if (values.json) {
    const { http, tcp, ...rest } = report;
    const strip = (s: PathStats) => ({ ...s, latenciesMs: undefined });
    process.stdout.write(`${JSON.stringify({ ...rest, http: strip(http), tcp: strip(tcp) }, null, 2)}\n`);
  } else {
    process.stdout.write(`${formatSoakReport(report)}\n`);
  }
  process.exitCode = report.mismatches.length === 0 && report.servicesAlive ? 0 : 1;
}
