// The stack as users run it: images built from this repo's Dockerfile, brought up by
// docker-compose.yml through testcontainers, checked end to end (the same checks as the
// process suite). Grafana is left out: the suite needs no dashboard server, only the
// Prometheus its dashboards query. Skips, saying so, when no Docker engine is reachable;
// REQUIRE_DOCKER=1 makes that a failure.
import { fileURLToPath } from 'node:url';
import { DockerComposeEnvironment, Wait, type StartedDockerComposeEnvironment } from 'testcontainers';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { probeUsage } from '../services/client/probe-usage.ts';
import { composeFiles, describeDocker, docker, publishedPort } from './helpers/docker-available.ts';
import { defineStackChecks, loopbackStack } from './helpers/e2e-checks.ts';
import { prometheusApi } from './helpers/prometheus-api.ts';
import { waitUntil } from './helpers/wait-until.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

await describeDocker(
  'end to end with the compose stack in containers',
  () => {
    let environment: StartedDockerComposeEnvironment | undefined;
    const containerId = (service: string) => environment!.getContainer(`${service}-1`).getId();
    // Host ports are chosen by Docker (published as port 0), so no other test can take
    // them first; a restarted container may get a new one, so it is looked up each time.
    const hostPort = (service: string, port: number): Promise<number> => publishedPort(containerId(service), port, service);
    const ports = { backend: 0, prometheus: 0, store: 0 };
    const refreshPorts = async () => {
      ports.backend = await hostPort('backend', 8080);
      ports.prometheus = await hostPort('prometheus', 9090);
      ports.store = await hostPort('store', 8765);
    };

    beforeAll(async () => {
      environment = await new DockerComposeEnvironment(root, [...composeFiles(), 'test/fixtures/compose.e2e.yml'])
        .withBuild()
        .withEnvironment({
          PUBLISH_ADDRESS: '127.0.0.1',
          BACKEND_PORT: '0',
          PROMETHEUS_PORT: '0',
          ALERTMANAGER_PORT: '0',
          GRAFANA_PORT: '0',
          E2E_STORE_PORT: '0',
          STORE_TIMEOUT_MS: '500',
        })
        .withWaitStrategy('store-1', Wait.forLogMessage(/"msg":"kvstore ready"/))
        .withWaitStrategy('backend-1', Wait.forHealthCheck())
        .withWaitStrategy('prometheus-1', Wait.forHttp('/-/ready', 9090))
        .withWaitStrategy('alertmanager-1', Wait.forHttp('/-/ready', 9093))
        .withStartupTimeout(300_000)
        .up(['store', 'backend', 'prometheus', 'alertmanager']);
      await refreshPorts();
    }, 900_000);

    afterAll(async () => {
      await environment?.down({ removeVolumes: true, timeout: 10_000 });
    }, 120_000);

    const backendReady = () =>
      waitUntil('the backend container to answer', async () => ((await fetch(`http://127.0.0.1:${ports.backend}/e2e-ready-probe`)).status === 404 ? true : undefined), {
        deadlineMs: 60_000,
      });

    const stack = loopbackStack(() => ports, () => prometheusApi(`http://127.0.0.1:${ports.prometheus}`), {
      stopStore: async () => {
        await docker('stop', '--time', '10', containerId('store'));
      },
      startStore: async () => {
        await docker('start', containerId('store'));
        await refreshPorts();
        await waitUntil('the store container to answer USAGE', () => probeUsage({ host: '127.0.0.1', port: ports.store, timeoutMs: 1000 }), {
          deadlineMs: 60_000,
        });
      },
      restartBackend: async () => {
        await docker('restart', '--time', '10', containerId('backend'));
        await refreshPorts();
        await backendReady();
      },
      backendIdentity: () => docker('inspect', '--format', '{{.State.StartedAt}}', containerId('backend')),
    });
    defineStackChecks(() => stack);

    it('bounds the kernel send buffer of the store\'s connections (tcp_wmem in its network namespace)', async () => {
      expect((await docker('exec', containerId('store'), 'cat', '/proc/sys/net/ipv4/tcp_wmem')).split(/\s+/)).toEqual(['4096', '16384', '262144']);
    });
  },
  { compose: true },
);
