// `npm start`: store and backend as two child processes, logs on stdout, one Ctrl-C
// (SIGINT) stops both cleanly and the runner exits 0.
import { afterEach, describe, expect, it } from 'vitest';
import { metricSum, scrape } from './helpers/backend-harness.ts';
import { freePort, startServiceProcess, type ServiceProcess } from './helpers/service-process.ts';
import { BACKEND_READY, STORE_READY } from '../services/shared/ready-line.ts';
import { readFileSync } from 'node:fs';
import { mapsShowGlibc } from '../services/store/runtime/malloc-tuning.ts';

const onGlibc = process.platform === 'linux' && mapsShowGlibc(readFileSync('/proc/self/maps', 'latin1'));

let runner: ServiceProcess | undefined;
afterEach(async () => {
  await runner?.stop('SIGKILL');
  runner = undefined;
});

async function untilLogged(service: ServiceProcess, msg: string): Promise<void> {
  // Polls the lines collected so far; the test time-out bounds it.
  while (!service.logs.some((l) => l.msg === msg)) await new Promise((r) => setTimeout(r, 20));
}

describe('npm start (services/start-local.ts)', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('runs store and backend, forwards their logs, and stops both on %s', async (signal) => {
    const ports = { store: await freePort(), storeAdmin: await freePort(), http: await freePort(), admin: await freePort() };
    runner = await startServiceProcess(
      'services/start-local.ts',
      {
        STORE_PORT: String(ports.store),
        STORE_METRICS_PORT: String(ports.storeAdmin),
        HOST: '127.0.0.1',
        PORT: String(ports.http),
        BACKEND_METRICS_PORT: String(ports.admin),
        KV_STORE: `127.0.0.1:${ports.store}`,
      },
      BACKEND_READY,
    );
    await untilLogged(runner, STORE_READY);
    // The store runs as its image does: one malloc arena for every thread, from the
    // GLIBC_TUNABLES npm start puts in its environment (elsewhere than glibc, none applies).
    const storeReady = runner.logs.find((l) => l.msg === STORE_READY);
    expect(storeReady?.mallocArenaMaxSetBy).toBe(onGlibc ? 'environment' : null);
    // The backend may have started first: wait until its pool has reconnected by itself.
    const connected = async () => metricSum(await scrape(ports.admin), 'kvbackend_store_pool_connections', 'state="connected"');
    while ((await connected()) < 4) await new Promise((r) => setTimeout(r, 20));
    expect((await fetch(`http://127.0.0.1:${ports.http}/k`, { method: 'PUT', body: 'v' })).status).toBe(204);
    expect(await (await fetch(`http://127.0.0.1:${ports.http}/k`)).text()).toBe('v');

    expect(await runner.stop(signal)).toBe(0);
    const msgs = runner.logs.map((l) => l.msg);
    expect(msgs).toContain('kvstore stopped');
    expect(msgs).toContain('kvbackend stopped');
  });

  it('stops the backend and exits 1 when the store cannot start', async () => {
    const port = await freePort();
    runner = await startServiceProcess(
      'services/start-local.ts',
      { STORE_PORT: 'not-a-port', HOST: '127.0.0.1', PORT: String(port), BACKEND_METRICS_PORT: '0', KV_STORE: '127.0.0.1:1' },
      BACKEND_READY,
    ).catch((err: Error) => {
      // The store may fail before the backend is even ready: then the runner has exited already.
      expect(err.message).toMatch(/exited with 1[\s\S]*STORE_PORT/);
      return undefined;
    });
    if (runner) expect(await runner.exited).toBe(1);
  });
});
