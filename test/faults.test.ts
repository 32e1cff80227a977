// Faults under load, with the services as child processes on free loopback ports: the
// store SIGKILLed (the backend answers 503 at once and recovers by itself when the store
// comes back on the same port), the store SIGSTOPped (504 after STORE_TIMEOUT_MS, then
// fast 503s while it stays silent, no pile-up of waiting commands, recovery after SIGCONT), and the backend restarted (every
// write that was acknowledged with 204 is readable afterwards). Nothing here is timed: a
// request that waited for a time-out it should not have waited for would outlast the
// test's own time-out, and every in-flight request is awaited before the checks.
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startBackendService, type BackendService } from '../services/backend/backend-service.ts';
import { StoreConnection } from '../services/client/index.ts';
import { loadBackendConfig } from '../services/config/config.ts';
import { parseStoreList } from '../services/config/store-list.ts';
import { createLogger } from '../services/shared/logger.ts';
import { metricSum } from '../bench/harness/exposition.ts';
import { call, type Outcome } from './helpers/http-call.ts';
import { killLeftovers } from './helpers/leftover-processes.ts';
import { backendScript, freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { BACKEND_READY, STORE_READY } from '../services/shared/ready-line.ts';

const children = new Set<ServiceProcess>();
const cleanups: (() => unknown)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await killLeftovers(children);
  children.clear();
});

async function startStore(port: number, metricsPort: number): Promise<ServiceProcess> {
  const p = await startServiceProcess(storeScript, { STORE_PORT: String(port), STORE_METRICS_PORT: String(metricsPort) }, STORE_READY);
  children.add(p);
  return p;
}

async function startBackendProcess(ports: { http: number; admin: number; store: number }, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const p = await startServiceProcess(
    backendScript,
    {
      HOST: '127.0.0.1',
      PORT: String(ports.http),
      BACKEND_METRICS_PORT: String(ports.admin),
      KV_STORE: `127.0.0.1:${ports.store}`,
      LOG_LEVEL: 'info',
      ...env,
    },
    BACKEND_READY,
  );
  children.add(p);
  return p;
}

function newAgent(): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  cleanups.push(() => agent.destroy());
  return agent;
}

/** Counts outcomes by kind, e.g. { 204: 310, 200: 305, 503: 96 }. */
class Tally {
  readonly counts = new Map<Outcome, number>();
  add(o: Outcome): void {
    this.counts.set(o, (this.counts.get(o) ?? 0) + 1);
  }
  get(o: Outcome): number {
    return this.counts.get(o) ?? 0;
  }
  total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
  kinds(): Outcome[] {
    return [...this.counts.keys()];
  }
  toString(): string {
    return JSON.stringify(Object.fromEntries(this.counts));
  }
}

/** Waits on a condition that changes on its own schedule (reconnection backoff), checking every 20 ms; bounded by `tries`. */
async function eventually(cond: () => Promise<boolean>, tries = 500): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not reached');
}

/** The sum of a metric's series whose labels include `labels` (every store series also carries a `shard` label). */
async function metricValue(port: number, name: string, labels = ''): Promise<number> {
  return metricSum(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), name, labels);
}

describe('the store SIGKILLed under load', () => {
  it('the backend answers 503 at once to every request, then recovers by itself when the store returns on the same port', { timeout: 90_000 }, async () => {
    const ports = { store: await freePort(), storeAdmin: await freePort(), http: await freePort(), admin: await freePort() };
    const store = await startStore(ports.store, ports.storeAdmin);
    // A ten-minute command time-out: a request that waited for it instead of failing fast
    // would outlast this test's own time-out.
    await startBackendProcess({ http: ports.http, admin: ports.admin, store: ports.store }, { STORE_TIMEOUT_MS: '600000', STORE_POOL_SIZE: '4' });
    await eventually(async () => (await metricValue(ports.admin, 'kvbackend_store_pool_connections', 'state="connected"')) === 4);
    const agent = newAgent();

    const before = new Tally();
    const after = new Tally();
    let killed = false;
    let afterKill = 0;
    const workers = 16;
    let okBeforeKill = 0;
    let killNow: () => void = () => {};
    const readyToKill = new Promise<void>((r) => (killNow = r));

    const worker = async (w: number): Promise<void> => {
      // Bounded: at most 400 requests per worker.
      for (let n = 0; n < 200; n++) {
        const wasKilled = killed;
        const put = await call(agent, ports.http, 'PUT', `/load-${w}-${n}`, `value ${w} ${n}`);
        const get = await call(agent, ports.http, 'GET', `/load-${w}-${n}`);
        for (const r of [put, get]) (wasKilled ? after : before).add(r.outcome);
        if (!wasKilled && put.outcome === 204 && get.outcome === 200) {
          expect(get.body).toBe(`value ${w} ${n}`);
          if (++okBeforeKill === 300) killNow();
        }
        if (wasKilled && (afterKill += 2) >= workers * 40) return;
      }
    };
    const running = Array.from({ length: workers }, (_, w) => worker(w));
    await readyToKill;
    store.child.kill('SIGKILL');
    await store.exited;
    killed = true;
    await Promise.all(running); // every request settles: none hangs on the dead store

    // Before and around the kill: answers or fast 503s; after it: 503 only.
    for (const kind of before.kinds()) expect([200, 204, 503], `before the kill: ${before}`).toContain(kind);
    expect(after.kinds(), `after the kill: ${after}`).toEqual([503]);
    expect(after.total()).toBeGreaterThanOrEqual(workers * 40);
    console.log(`store SIGKILL: before ${before}, after ${after}`);

    // Back on the same port: the pool reconnects by itself (no backend restart).
    await startStore(ports.store, ports.storeAdmin);
    await eventually(async () => (await metricValue(ports.admin, 'kvbackend_store_pool_connections', 'state="connected"')) === 4);
    const recovered = new Tally();
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let n = 0; n < 25; n++) {
          recovered.add((await call(agent, ports.http, 'PUT', `/again-${w}-${n}`, `v${n}`)).outcome);
          const got = await call(agent, ports.http, 'GET', `/again-${w}-${n}`);
          recovered.add(got.outcome);
          expect(got.body).toBe(`v${n}`);
        }
      }),
    );
    expect(recovered.kinds().sort(), `after the restart: ${recovered}`).toEqual([200, 204]);
  });
});

describe('the store SIGSTOPped under load', () => {
  it('requests get 504 after STORE_TIMEOUT_MS then fast 503s, waiting store commands never pile up, and service resumes after SIGCONT', { timeout: 90_000 }, async () => {
    const ports = { store: await freePort(), storeAdmin: await freePort() };
    const store = await startStore(ports.store, ports.storeAdmin);
    // The backend in-process, so the test can read its pool's pending commands directly.
    const config = loadBackendConfig(
      {},
      { host: '127.0.0.1', port: 0, metricsPort: 0, logLevel: 'silent', store: parseStoreList(`127.0.0.1:${ports.store}`, 'KV_STORE'), storeTimeoutMs: 300, storePoolSize: 4 },
    );
    const backend: BackendService = await startBackendService(config, { logger: createLogger({ name: 'test', level: 'silent' }) });
    cleanups.push(() => backend.destroy());
    await eventually(async () => backend.ring.stateCounts().connected === 4);
    const pending = () => backend.ring.connections.reduce((sum, c) => sum + c.pending, 0);
    const agent = newAgent();

    const workers = 16;
    const before = new Tally();
    const during = new Tally();
    let stopped = false;
    let duringCount = 0;
    let mostPending = 0;
    let okBeforeStop = 0;
    let stopNow: () => void = () => {};
    const readyToStop = new Promise<void>((r) => (stopNow = r));

    const worker = async (w: number): Promise<void> => {
      for (let n = 0; n < 300; n++) {
        const wasStopped = stopped;
        const r = await call(agent, backend.port, n % 2 ? 'GET' : 'PUT', `/stop-${w}-${n >> 1}`, n % 2 ? undefined : `v${n}`);
        mostPending = Math.max(mostPending, pending());
        if (!wasStopped) {
          before.add(r.outcome);
          if ((r.outcome === 204 || r.outcome === 200) && ++okBeforeStop === 200) stopNow();
        } else {
          during.add(r.outcome);
          if (++duringCount >= workers * 6) return;
        }
      }
    };
    const running = Array.from({ length: workers }, (_, w) => worker(w));
    await readyToStop;
    process.kill(store.pid, 'SIGSTOP');
    stopped = true;
    // Sampled between responses too, while requests wait on the stopped store.
    const sampler = setInterval(() => (mostPending = Math.max(mostPending, pending())), 5);
    cleanups.push(() => clearInterval(sampler));
    await Promise.all(running);
    clearInterval(sampler);

    // Each worker has one request in flight, and each request one store command: a pile-up
    // (retries, leaked entries) would show as more pending commands than workers.
    expect(mostPending).toBeLessThanOrEqual(workers);
    expect(pending()).toBe(0);
    for (const kind of during.kinds()) expect([503, 504], `while stopped: ${during}`).toContain(kind);
    // The silence is found by a time-out (504 within STORE_TIMEOUT_MS for the requests it
    // caught), then every request fails fast (503) while the store stays silent: a worker
    // waits for at most one time-out, never one per request.
    expect(before.get(504) + during.get(504), `time-outs: before ${before}, while stopped ${during}`).toBeGreaterThan(0);
    expect(during.get(504), `while stopped: ${during}`).toBeLessThanOrEqual(workers);
    expect(during.get(503), `while stopped: ${during}`).toBeGreaterThan(workers);
    // Requests begun before the stop: answered, except those still in flight when it came (one per worker at most).
    for (const kind of before.kinds()) expect([200, 204, 503, 504], `before the stop: ${before}`).toContain(kind);
    expect(before.get(503) + before.get(504), `before the stop: ${before}`).toBeLessThanOrEqual(workers);
    const timeouts = await metricValue(backend.metricsPort, 'kvbackend_store_errors_total', 'kind="timeout"');
    expect(timeouts).toBeGreaterThan(0);
    console.log(`store SIGSTOP: before ${before}, while stopped ${during}, most pending store commands ${mostPending}`);

    process.kill(store.pid, 'SIGCONT');
    // Recovery by itself: writes and reads answer again, with the data written before the stop intact.
    await eventually(async () => (await call(agent, backend.port, 'PUT', '/resumed', 'yes')).outcome === 204);
    expect((await call(agent, backend.port, 'GET', '/resumed')).body).toBe('yes');
    const after = new Tally();
    for (let n = 0; n < 50; n++) after.add((await call(agent, backend.port, 'PUT', `/after-${n}`, 'v')).outcome);
    expect(after.kinds(), `after SIGCONT: ${after}`).toEqual([204]);
    expect((await call(agent, backend.port, 'GET', '/stop-0-0')).outcome).toBe(200);
  });
});

describe('the backend restarted under load', () => {
  it('loses no acknowledged write: every write answered 204 is readable afterwards', { timeout: 120_000 }, async () => {
    const ports = { store: await freePort(), storeAdmin: await freePort(), http: await freePort(), admin: await freePort() };
    await startStore(ports.store, ports.storeAdmin);
    let backend = await startBackendProcess({ http: ports.http, admin: ports.admin, store: ports.store });
    const agent = newAgent();

    // Each worker owns its keys (a single writer per key) and overwrites them in turn. Per key:
    // the last acknowledged value, and the values of writes that failed since (they may or may
    // not have reached the store before the backend went away).
    const workers = 12;
    const keysPerWorker = 40;
    const state = new Map<string, { acked: string | undefined; unknown: string[] }>();
    let acked = 0;
    const failures = [new Tally(), new Tally(), new Tally(), new Tally()]; // by phase
    let phase = 0; // 0 load, 1 after the SIGTERM restart, 2 after the SIGKILL restart, 3 stop
    let up: Promise<void> = Promise.resolve();
    let markUp: () => void = () => {};
    const targets = [250, 500, 750];
    let reached: () => void = () => {};
    let target = new Promise<void>((r) => (reached = r));

    const worker = async (w: number): Promise<void> => {
      for (let n = 0; n < 5000 && phase < 3; n++) {
        const key = `ack-${w}-${n % keysPerWorker}`;
        const value = `w${w}-n${n}-${Math.random().toString(36).slice(2)}`;
        const s = state.get(key) ?? { acked: undefined, unknown: [] };
        state.set(key, s);
        const r = await call(agent, ports.http, 'PUT', `/${key}`, value);
        if (r.outcome === 204) {
          s.acked = value;
          s.unknown = [];
          if (++acked >= targets[Math.min(phase, targets.length - 1)]!) reached();
        } else {
          s.unknown.push(value);
          failures[phase]!.add(r.outcome);
          // While the backend is down, wait for it to be back instead of spinning.
          if (typeof r.outcome === 'string') await up;
        }
      }
    };

    const running = Array.from({ length: workers }, (_, w) => worker(w));
    const restart = async (signal: NodeJS.Signals) => {
      await target;
      up = new Promise((r) => (markUp = r));
      await backend.stop(signal);
      backend = await startBackendProcess({ http: ports.http, admin: ports.admin, store: ports.store });
      markUp();
      phase++;
      target = new Promise((r) => (reached = r));
    };
    await restart('SIGTERM');
    await restart('SIGKILL');
    await target;
    phase = 3;
    await Promise.all(running);

    // Read every key back, through the new backend and straight from the store.
    const direct = new StoreConnection({ host: '127.0.0.1', port: ports.store, timeoutMs: 5000, reconnect: false });
    cleanups.push(() => direct.destroy());
    let checked = 0;
    const lost: string[] = [];
    for (const [key, s] of state) {
      if (s.acked === undefined && s.unknown.length === 0) continue;
      const viaHttp = await call(agent, ports.http, 'GET', `/${key}`);
      const viaStore = (await direct.get(key))?.toString();
      // The last acknowledged value, or a later write whose answer was lost with the backend.
      const allowed: (string | undefined)[] = [s.acked, ...s.unknown];
      if (s.acked !== undefined) checked++;
      const got = viaHttp.outcome === 200 ? viaHttp.body : undefined;
      if (got !== viaStore || !allowed.includes(got)) lost.push(`${key}: http ${viaHttp.outcome} ${got}, store ${viaStore}, allowed ${allowed.join('|')}`);
    }
    console.log(
      `backend restarts: ${acked} writes acknowledged, ${checked} keys checked; failed writes around the SIGTERM restart ${failures[0]}, ` +
        `around the SIGKILL restart ${failures[1]}, after ${failures[2]}`,
    );
    expect(lost, `acknowledged writes lost (${acked} acknowledged)`).toEqual([]);
    expect(acked).toBeGreaterThanOrEqual(750);
    expect(checked).toBeGreaterThan((workers * keysPerWorker) / 2);
  });
});
