import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, it } from 'vitest';

export interface DockerStatus {
  readonly available: boolean;
  /** Why not, in words fit for a skip message; empty when available. */
  readonly reason: string;
}

export interface DockerCheckOptions {
  /** Also require Compose v2 (`docker compose`), which testcontainers' compose support runs. */
  readonly compose?: boolean;
  readonly timeoutMs?: number;
}

function run(args: string[], timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
  return new Promise((resolve) => {
    execFile('docker', args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (!err) return resolve({ ok: true, detail: stdout.trim() });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return resolve({ ok: false, detail: 'the docker command is not installed' });
      if (err.killed) return resolve({ ok: false, detail: `\`docker ${args.join(' ')}\` did not answer within ${timeoutMs} ms` });
      const firstLine = (stderr || err.message).trim().split('\n')[0];
      resolve({ ok: false, detail: firstLine });
    });
  });
}

/**
 * Whether a Docker engine answers (`docker info`, the same check a person would make),
 * and with `compose: true` whether Compose v2 is there too.
 */
export async function dockerStatus(options: DockerCheckOptions = {}): Promise<DockerStatus> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const engine = await run(['info', '--format', '{{.ServerVersion}}'], timeoutMs);
  if (!engine.ok) return { available: false, reason: `no Docker engine reachable: ${engine.detail}` };
  if (options.compose) {
    const compose = await run(['compose', 'version'], timeoutMs);
    if (!compose.ok) return { available: false, reason: `Docker Compose v2 is not available: ${compose.detail}` };
  }
  return { available: true, reason: '' };
}

export async function dockerAvailable(options: DockerCheckOptions = {}): Promise<boolean> {
  return (await dockerStatus(options)).available;
}

/** REQUIRE_DOCKER=1 turns "no engine, suite skipped" into a failure (CI sets it). */
export function dockerRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.REQUIRE_DOCKER === '1';
}

/**
 * `describe` for a suite that needs Docker. Call it with top-level await:
 *
 *   await describeDocker('compose stack', () => { ... }, { compose: true });
 *
 * With an engine it is a plain describe. Without one the suite is skipped and a line
 * says so and why; with REQUIRE_DOCKER=1 it becomes one failing test with that reason.
 */
export async function describeDocker(name: string, fn: () => void, options: DockerCheckOptions = {}): Promise<void> {
  const status = await dockerStatus(options);
  if (status.available) {
    describe(name, fn);
    return;
  }
  if (dockerRequired()) {
    describe(name, () => {
      it('has the Docker engine it needs (REQUIRE_DOCKER=1)', () => {
        throw new Error(`REQUIRE_DOCKER=1 but ${status.reason}`);
      });
    });
    return;
  }
  console.log(`SKIPPED "${name}" — ${status.reason} (REQUIRE_DOCKER=1 makes this a failure)`);
  describe.skip(name, fn);
}

/**
 * The compose files a container suite should pass to testcontainers: the repo's
 * docker-compose.yml, plus any listed in KVSTACK_COMPOSE_OVERRIDE (comma-separated,
 * relative to the repo root). CI sets it to deploy/compose.ci.yml so that image builds
 * use the host network on engines without NAT; elsewhere it is unset.
 */
export function composeFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (env.KVSTACK_COMPOSE_OVERRIDE ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  return ['docker-compose.yml', ...extra];
}

/** Runs `docker ...args` and resolves with its stdout, trimmed. */
export async function docker(...args: string[]): Promise<string> {
  return (await promisify(execFile)('docker', args)).stdout.trim();
}

/**
 * The host port Docker published for a container's `port`/tcp. Looked up each time it is
 * needed: a restarted container may get a new one. `name` says which container in errors.
 */
export async function publishedPort(containerId: string, port: number, name = containerId): Promise<number> {
  const mapping = await docker('port', containerId, `${port}/tcp`);
  const m = /:(\d+)\s*$/m.exec(mapping.split('\n')[0]!);
  if (!m) throw new Error(`no host port for ${name}:${port} (docker port said ${JSON.stringify(mapping)})`);
  return Number(m[1]);
}
