// docker-compose.yml with deploy/compose.secure.yml in containers, its files made by
// deploy/make-secure-files.sh into a temporary directory: the backend serves HTTPS and
// asks for a bearer token, the store speaks TLS only, wants a client certificate and the
// password, and the backend gets through both; no container log line holds the password
// or a token. Skips, saying so, when no Docker engine is reachable; REQUIRE_DOCKER=1
// makes that a failure.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { connect as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DockerComposeEnvironment, Wait, type StartedDockerComposeEnvironment } from 'testcontainers';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { composeFiles, describeDocker, publishedPort } from './helpers/docker-available.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

await describeDocker(
  'the compose stack with deploy/compose.secure.yml',
  () => {
    let environment: StartedDockerComposeEnvironment | undefined;
    const dir = mkdtempSync(join(tmpdir(), 'kvstack-secure-'));
    const files = { ca: '', password: '', write: '', read: '', clientCert: '', clientKey: '' };
    const ports = { backend: 0, store: 0 };
    const containerId = (service: string) => environment!.getContainer(`${service}-1`).getId();

    beforeAll(async () => {
      execFileSync('sh', ['deploy/make-secure-files.sh', dir], { cwd: root, stdio: 'ignore' });
      files.ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
      files.password = readFileSync(join(dir, 'store-password'), 'utf8').replace(/\n$/, '');
      const tokens = readFileSync(join(dir, 'tokens'), 'utf8');
      files.write = /^write (\S+)$/m.exec(tokens)![1]!;
      files.read = /^read (\S+)$/m.exec(tokens)![1]!;
      files.clientCert = readFileSync(join(dir, 'client.crt'), 'utf8');
      files.clientKey = readFileSync(join(dir, 'client.key'), 'utf8');
      environment = await new DockerComposeEnvironment(root, [...composeFiles(), 'deploy/compose.secure.yml', 'test/fixtures/compose.e2e.yml'])
        .withBuild()
        .withEnvironment({ KVSTACK_SECURE_DIR: dir, PUBLISH_ADDRESS: '127.0.0.1', BACKEND_PORT: '0', E2E_STORE_PORT: '0' })
        .withWaitStrategy('store-1', Wait.forLogMessage(/"msg":"kvstore ready"/))
        .withWaitStrategy('backend-1', Wait.forHealthCheck())
        .withStartupTimeout(300_000)
        .up(['store', 'backend']);
      ports.backend = await publishedPort(containerId('backend'), 8080, 'backend');
      ports.store = await publishedPort(containerId('store'), 8765, 'store');
    }, 900_000);

    afterAll(async () => {
      await environment?.down({ removeVolumes: true, timeout: 10_000 });
      rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    /** One HTTPS request to the backend, trusting the stack's CA. */
    const https = (method: string, path: string, token?: string, body?: string) =>
      new Promise<{ status: number; text: string; challenge: string | undefined }>((resolve, reject) => {
        const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
        const req = request({ host: '127.0.0.1', port: ports.backend, method, path, ca: files.ca, servername: 'localhost', headers, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString(), challenge: res.headers['www-authenticate'] }));
        });
        req.on('error', reject);
        req.end(body);
      });

    it('the backend serves HTTPS with a write token, through the store over TLS with the password', async () => {
      expect((await https('PUT', '/secure-greeting', files.write, 'hello over TLS')).status).toBe(204);
      const got = await https('GET', '/secure-greeting', files.read);
      expect([got.status, got.text]).toEqual([200, 'hello over TLS']);
    });

    it('refuses a request without a token (401) and a read token writing (403); plain HTTP gets no answer', async () => {
      const none = await https('GET', '/secure-greeting');
      expect([none.status, none.challenge]).toEqual([401, 'Bearer realm="kvbackend"']);
      expect((await https('PUT', '/secure-greeting', files.read, 'x')).status).toBe(403);
      const plain = await fetch(`http://127.0.0.1:${ports.backend}/secure-greeting`).then(
        (r) => r.status,
        () => 'refused',
      );
      expect(plain).toBe('refused');
    });

    it('the store answers only TLS with a client certificate of the CA, and then only after AUTH', async () => {
      // Plaintext: the handshake never comes, and the store closes the connection unanswered.
      const plaintext = await new Promise<string>((resolve) => {
        let got = '';
        const socket = connectTcp({ host: '127.0.0.1', port: ports.store }, () => socket.write('PING\n'));
        socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
        socket.on('close', () => resolve(got));
        socket.on('error', () => {});
        socket.setTimeout(15_000, () => socket.destroy());
      });
      expect(plaintext).not.toContain('PONG');
      const lines = await new Promise<string[]>((resolve, reject) => {
        const socket = connectTls({ host: '127.0.0.1', port: ports.store, ca: files.ca, cert: files.clientCert, key: files.clientKey, servername: 'localhost' }, () => {
          socket.write(`PING\nAUTH ${files.password}\nPING\nQUIT\n`);
        });
        let got = '';
        socket.on('data', (c: Buffer) => (got += c.toString()));
        socket.on('end', () => resolve(got.trim().split('\n')));
        socket.on('error', reject);
      });
      expect(lines).toEqual(['ERROR authentication required', 'OK', 'PONG', 'BYE']);
    });

    it('no log line of the store or the backend holds the password or a token', async () => {
      const logs = async (service: string): Promise<string> => {
        const { stdout, stderr } = await promisify(execFile)('docker', ['logs', containerId(service)], { maxBuffer: 64 * 1024 * 1024 });
        return stdout + stderr;
      };
      for (const service of ['store', 'backend']) {
        const text = await logs(service);
        expect(text.split('\n').filter((l) => l.startsWith('{')).length, service).toBeGreaterThan(0);
        for (const secret of [files.password, files.write, files.read]) expect(text.includes(secret), `${service} logged a secret`).toBe(false);
      }
    });
  },
  { compose: true },
);
