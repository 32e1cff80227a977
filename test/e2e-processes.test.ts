// The end-to-end checks without a container engine: store and backend as real local
// processes, a real Prometheus scraping their admin ports with the repo's alert rules.
// test/e2e-compose.test.ts and test/e2e-module.test.ts run the same checks against the
// container images, brought up by docker-compose.yml and by kvstack/testcontainers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe } from 'vitest';
import { defineStackChecks, loopbackStack } from './helpers/e2e-checks.ts';
import { prometheusAvailable, startPrometheus, type PrometheusProcess } from './helpers/prometheus-process.ts';
import { backendScript, freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { BACKEND_READY, STORE_READY } from '../services/shared/ready-line.ts';

const required = process.env.CI === 'true' || process.env.REQUIRE_PROMETHEUS === '1';
const available = prometheusAvailable();
if (!available) {
  console.warn(`e2e-processes: SKIPPED — no 'prometheus' binary on PATH${required ? ' (required here: failing)' : " (install Debian's prometheus package to run it)"}`);
}

const rules = fileURLToPath(new URL('../alert-rules.yml', import.meta.url));

describe.skipIf(!available && !required)('end to end with local processes and a real Prometheus', () => {
  let store: ServiceProcess | undefined;
  let backend: ServiceProcess | undefined;
  let prom: PrometheusProcess | undefined;
  const ports = { store: 0, storeAdmin: 0, http: 0, backendAdmin: 0 };
  const dataDir = mkdtempSync(join(tmpdir(), 'kvstack-e2e-'));

  const startStore = async () => {
    const env = { STORE_PORT: String(ports.store), STORE_METRICS_PORT: String(ports.storeAdmin), STORE_SNAPSHOT_PATH: join(dataDir, 'store.snapshot') };
    store = await startServiceProcess(storeScript, env, STORE_READY);
  };
  const startBackend = async () => {
    const env = { HOST: '127.0.0.1', PORT: String(ports.http), BACKEND_METRICS_PORT: String(ports.backendAdmin), KV_STORE: `127.0.0.1:${ports.store}` };
    backend = await startServiceProcess(backendScript, env, BACKEND_READY);
  };
  const stopped = async (service: ServiceProcess | undefined) => {
    const code = await service?.stop('SIGTERM');
    if (code !== 0) throw new Error(`service exited with ${code} on SIGTERM, expected 0`);
  };

  beforeAll(async () => {
    if (!available) throw new Error("no 'prometheus' binary on PATH, and CI=true / REQUIRE_PROMETHEUS=1 requires this suite");
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    await startStore();
    await startBackend();
    prom = await startPrometheus(
      [
        { job: 'kvstore', target: `127.0.0.1:${ports.storeAdmin}` },
        { job: 'kvbackend', target: `127.0.0.1:${ports.backendAdmin}` },
      ],
      [rules],
    );
  });

  afterAll(async () => {
    await prom?.stop();
    await backend?.stop();
    await store?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const stack = loopbackStack(() => ({ backend: ports.http, store: ports.store }), () => prom!, {
    stopStore: () => stopped(store),
    startStore,
    restartBackend: async () => {
      await stopped(backend);
      await startBackend();
    },
    backendIdentity: async () => String(backend!.pid),
  });
  defineStackChecks(() => stack);
});
