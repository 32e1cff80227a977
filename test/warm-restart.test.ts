// Warm restart end to end: the store and the backend as child processes, HTTP writers
// running, and the store restarted (SIGTERM, then a new process on the same port with the
// same STORE_SNAPSHOT_PATH) in the middle of the load. Every write the backend answered
// 204 must read back afterwards, byte for byte; writes made while the store was down got
// an error and are not counted. Nothing is timed: the test waits on the processes' ready
// lines and on the backend's readiness.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backendScript, freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { call } from './helpers/http-call.ts';
import { killLeftovers } from './helpers/leftover-processes.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { BACKEND_READY, STORE_READY } from '../services/shared/ready-line.ts';

const children = new Set<ServiceProcess>();
const dirs: string[] = [];

afterEach(async () => {
  await killLeftovers(children);
  children.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(script: string, env: Record<string, string>, ready: string): Promise<ServiceProcess> {
  const p = await startServiceProcess(script, env, ready);
  children.add(p);
  return p;
}

describe('warm restart under load through the backend', () => {
  it('every write answered 204 reads back after the store restarts', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvstack-warm-'));
    dirs.push(dir);
    const ports = { store: await freePort(), storeAdmin: await freePort(), http: await freePort(), admin: await freePort() };
    const storeEnv = { STORE_PORT: String(ports.store), STORE_METRICS_PORT: String(ports.storeAdmin), STORE_SNAPSHOT_PATH: join(dir, 'store.snapshot') };
    let store = await start(storeScript, storeEnv, STORE_READY);
    await start(
      backendScript,
      { HOST: '127.0.0.1', PORT: String(ports.http), BACKEND_METRICS_PORT: String(ports.admin), KV_STORE: `127.0.0.1:${ports.store}` },
      BACKEND_READY,
    );
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    try {
      const acknowledged = new Map<string, string>();
      const outcomes = new Map<string, number>();
      let restarted = false;
      let writesAfterRestart = 0;
      const restartAfter = 300;
      let written = 0;
      let restart: Promise<void> | undefined;
      const worker = async (w: number): Promise<void> => {
        // Bounded: 150 writes per worker, each to a key of its own.
        for (let n = 0; n < 150; n++) {
          const key = `warm-${w}-${n}`;
          const value = `value ${w} ${n} ${'x'.repeat((w * 37 + n) % 200)}`;
          const r = await call(agent, ports.http, 'PUT', `/${key}`, value);
          outcomes.set(String(r.outcome), (outcomes.get(String(r.outcome)) ?? 0) + 1);
          if (r.outcome === 204) {
            acknowledged.set(key, value);
            if (restarted) writesAfterRestart++;
          }
          if (++written === restartAfter) {
            restart = (async () => {
              expect(await store.stop('SIGTERM')).toBe(0);
              expect(store.logs.find((l) => l.msg === 'snapshot saved')).toBeDefined();
              store = await start(storeScript, storeEnv, STORE_READY);
              expect(store.logs.find((l) => l.msg === 'snapshot loaded')).toBeDefined();
              // Ready means the backend's pooled connections are back: writes go through again.
              await waitUntil('the backend to be ready again', async () => ((await call(agent, ports.admin, 'GET', '/readyz')).outcome === 200 ? true : undefined), { everyMs: 20 });
              restarted = true;
            })();
          }
          // After the restart, wait for the store before writing on (bounded by the test's time-out).
          if (restart && !restarted && n % 10 === 0) await restart;
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
      await restart;
      expect(writesAfterRestart).toBeGreaterThan(0);
      expect(acknowledged.size).toBeGreaterThan(restartAfter / 2);
      const lost: string[] = [];
      for (const [key, value] of acknowledged) {
        const r = await call(agent, ports.http, 'GET', `/${key}`);
        if (r.outcome !== 200 || r.body !== value) lost.push(`${key}: ${r.outcome}`);
      }
      expect(lost, `outcomes ${JSON.stringify(Object.fromEntries(outcomes))}`).toEqual([]);
    } finally {
      agent.destroy();
    }
  });
});
