// The end-to-end checks on the stack as a user's tests start it: the store and the backend
// by kvstack/testcontainers (images built from this checkout), a real Prometheus (the local
// process of e2e-processes) scraping their admin ports with the repo's alert rules. The
// same checks as e2e-processes and e2e-compose. Skips, saying so, without a Docker engine
// (REQUIRE_DOCKER=1 makes that a failure) or a `prometheus` binary (CI=true or
// REQUIRE_PROMETHEUS=1 make that one).
//
// A restart keeps what Prometheus scrapes and what the backend dials:
// - the host ports are fixed (free ports chosen here), since Docker gives a container
//   started again new ephemeral ones, and Prometheus' targets are written once;
// - the backend reaches the store by its network alias through Docker's DNS (the module
//   does that on a network of the caller's), which follows a store that comes back at
//   another address;
// - the store is stopped and started as the same container (`docker stop`/`docker start`,
//   as e2e-compose does): Testcontainers' own stop removes it and its restart() leaves
//   no time between the two, when the checks look at the stack without its store.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Network, type StartedNetwork } from 'testcontainers';
import { afterAll, beforeAll, describe } from 'vitest';
import { probeUsage } from '../services/client/probe-usage.ts';
import { BACKEND_ADMIN_PORT, BACKEND_HTTP_PORT, KvstackBackendContainer, KvstackContainer, STORE_ADMIN_PORT, STORE_PORT, type StartedKvstackBackendContainer, type StartedKvstackContainer } from '../services/testcontainers/index.ts';
import { describeDocker, docker } from './helpers/docker-available.ts';
import { defineStackChecks, loopbackStack } from './helpers/e2e-checks.ts';
import { buildKvstackImages } from './helpers/kvstack-images.ts';
import { prometheusAvailable, startPrometheus, type PrometheusProcess } from './helpers/prometheus-process.ts';
import { freePort } from './helpers/service-process.ts';
import { waitUntil } from './helpers/wait-until.ts';

const prometheusRequired = process.env.CI === 'true' || process.env.REQUIRE_PROMETHEUS === '1';
const hasPrometheus = prometheusAvailable();
if (!hasPrometheus) {
  console.warn(`e2e-module: SKIPPED — no 'prometheus' binary on PATH${prometheusRequired ? ' (required here: failing)' : " (install Debian's prometheus package to run it)"}`);
}
const rules = fileURLToPath(new URL('../alert-rules.yml', import.meta.url));

const suite = 'end to end with the stack started by the Testcontainers module';
const checks = (): void => {
  let network: StartedNetwork | undefined;
  let store: StartedKvstackContainer | undefined;
  let backend: StartedKvstackBackendContainer | undefined;
  let prom: PrometheusProcess | undefined;
  const volume = `kvstack-e2e-${randomUUID()}`;
  const ports = { store: 0, storeAdmin: 0, http: 0, backendAdmin: 0 };

  beforeAll(async () => {
    if (!hasPrometheus) throw new Error("no 'prometheus' binary on PATH, and CI=true / REQUIRE_PROMETHEUS=1 requires this suite");
    await buildKvstackImages();
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    network = await new Network().start();
    store = await new KvstackContainer()
      .withNetwork(network)
      .withNetworkAliases('kvstore')
      // Warm restart: the snapshot written when the store stops is loaded when it starts.
      .withSnapshot(volume)
      .withExposedPorts({ container: STORE_PORT, host: ports.store }, { container: STORE_ADMIN_PORT, host: ports.storeAdmin })
      .start();
    backend = await new KvstackBackendContainer()
      .withStore(store)
      // As e2e-compose: a stopped store shows as 503 within the checks' waits.
      .withEnvironment({ STORE_TIMEOUT_MS: '500' })
      .withExposedPorts({ container: BACKEND_HTTP_PORT, host: ports.http }, { container: BACKEND_ADMIN_PORT, host: ports.backendAdmin })
      .start();
    prom = await startPrometheus(
      [
        { job: 'kvstore', target: `127.0.0.1:${ports.storeAdmin}` },
        { job: 'kvbackend', target: `127.0.0.1:${ports.backendAdmin}` },
      ],
      [rules],
    );
  }, 900_000);

  afterAll(async () => {
    await prom?.stop();
    await backend?.stop();
    await store?.stop();
    await network?.stop();
    await docker('volume', 'rm', '-f', volume).catch(() => undefined);
  }, 120_000);

  const stack = loopbackStack(() => ({ backend: ports.http, store: ports.store }), () => prom!, {
    stopStore: async () => {
      await docker('stop', '--time', '10', store!.getId());
    },
    startStore: async () => {
      await docker('start', store!.getId());
      await waitUntil('the store container to answer USAGE', () => probeUsage({ host: '127.0.0.1', port: ports.store, timeoutMs: 1000 }), { deadlineMs: 60_000 });
    },
    // Testcontainers' restart: SIGTERM (SIGKILL after 10 s), then its wait strategy
    // again (the backend's /readyz), the same host ports.
    restartBackend: () => backend!.restart({ timeout: 10_000 }),
    backendIdentity: () => docker('inspect', '--format', '{{.State.StartedAt}}', backend!.getId()),
  });
  defineStackChecks(() => stack);
};

if (hasPrometheus || prometheusRequired) await describeDocker(suite, checks, { compose: true });
else describe.skip(suite, checks);
