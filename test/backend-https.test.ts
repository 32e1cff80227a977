// SPEC §8 "Backend HTTPS": BACKEND_TLS_CERT_FILE and BACKEND_TLS_KEY_FILE make PORT speak
// HTTPS (the admin port stays HTTP), with a CA and certificates the test makes with openssl;
// the pair reloaded by SIGHUP and by a Kubernetes symlink swap while a client stays
// connected on the old certificate; a reload that fails; the start-up refusals.
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { Agent, request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBackendConfig } from '../services/config/config.ts';
import { ConfigError } from '../services/shared/config-error.ts';
import { backendHarness, loggerWithSink, metricSum, scrape, send, statusOf } from './helpers/backend-harness.ts';
import { pem, tlsFixture } from './helpers/tls-certs.ts';
import { waitUntil } from './helpers/wait-until.ts';

const h = backendHarness();
/** A server certificate and its key, as files and as PEM, and its serial number, to tell two apart on the wire. */
interface ServerCert {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
  readonly serial: string;
}
const certs = tlsFixture();
const caPem = pem(certs.ca);
const serverCert = (name: string): ServerCert => {
  const issued = certs.issue(name, { cn: name, eku: 'serverAuth' });
  const cert = pem(issued.cert);
  return { certFile: issued.cert, keyFile: issued.key, cert, key: pem(issued.key), serial: new X509Certificate(cert).serialNumber };
};
const first = serverCert('https-first');
const second = serverCert('https-second');
const dir = mkdtempSync(join(tmpdir(), 'kv-https-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface HttpsReply {
  readonly status: number;
  readonly text: string;
  /** The serial number of the certificate the connection was made with. */
  readonly serial: string;
  readonly reused: boolean;
}

/** One HTTPS request trusting only the test CA; `agent` keeps its connection for the next. */
function call(port: number, method: string, path: string, { agent, body, headers = {} }: { agent?: Agent; body?: string; headers?: Record<string, string> } = {}): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, ca: caPem, agent: agent ?? false, headers }, (res) => {
      // Read now: a kept-alive socket goes back to its agent once the response ends.
      const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString(), serial, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const keptAgent = (): Agent => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: caPem });
  h.defer(() => agent.destroy());
  return agent;
};

/** Copies a certificate and its key to `certFile` and `keyFile`. */
function place(cert: ServerCert, certFile: string, keyFile: string): void {
  copyFileSync(cert.certFile, certFile);
  copyFileSync(cert.keyFile, keyFile);
}

let placed = 0;
function placedPair(cert: ServerCert): { certFile: string; keyFile: string } {
  const n = placed++;
  const files = { certFile: join(dir, `tls-${n}.crt`), keyFile: join(dir, `tls-${n}.key`) };
  place(cert, files.certFile, files.keyFile);
  return files;
}

async function httpsBackend(cert: ServerCert = first, level: 'silent' | 'info' | 'trace' = 'silent') {
  const store = await h.store();
  const files = placedPair(cert);
  const { logger, sink } = loggerWithSink(level);
  const backend = await h.backend(store.port, { tlsCertFile: files.certFile, tlsKeyFile: files.keyFile }, { logger, filePollMs: 10 });
  return { backend, sink, ...files };
}

const sameSerial = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

describe('backend HTTPS', () => {
  it('serves the API over HTTPS with the certificate given; the admin port stays HTTP', async () => {
    const { backend } = await httpsBackend();
    expect((await call(backend.port, 'PUT', '/greeting', { body: 'hello' })).status).toBe(204);
    const got = await call(backend.port, 'GET', '/greeting');
    expect([got.status, got.text]).toEqual([200, 'hello']);
    expect(sameSerial(got.serial, first.serial)).toBe(true);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    const metrics = await scrape(backend.metricsPort);
    expect(metricSum(metrics, 'kvbackend_tls_certificate_expiry_timestamp_seconds')).toBe(Math.floor(new Date(new (await import('node:crypto')).X509Certificate(first.cert).validTo).getTime() / 1000));
    expect(metricSum(metrics, 'kvbackend_tls_reload_failures_total')).toBe(0);
  });

  it('plain HTTP on the HTTPS port gets no answer; the failed handshake is counted by reason and logged', async () => {
    const { backend, sink } = await httpsBackend(first, 'info');
    const plain = await send(backend.port, 'GET', '/greeting').then((r) => r.status, (err: Error) => err.message);
    expect(plain).toBe('socket hang up');
    const metrics = await scrape(backend.metricsPort);
    expect(metricSum(metrics, 'kvbackend_tls_handshake_failures_total', 'reason="plaintext"')).toBe(1);
    expect(metricSum(metrics, 'kvbackend_tls_handshake_failures_total')).toBe(1);
    expect(sink.lines.filter((l) => l.msg === 'TLS handshake failed: connection closed')).toEqual([expect.objectContaining({ level: 40, reason: 'plaintext', remote: '127.0.0.1' })]);
  });

  it('a client that does not trust the CA refuses the connection', async () => {
    const { backend } = await httpsBackend();
    const outcome = await new Promise<string>((resolve) => {
      const req = request({ host: '127.0.0.1', port: backend.port, path: '/k', agent: false }, () => resolve('answered'));
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end();
    });
    expect(outcome).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });

  it('with tokens too: the token travels inside TLS and is checked as over HTTP', async () => {
    const store = await h.store();
    const files = placedPair(first);
    const tokensFile = join(dir, 'tokens');
    writeFileSync(tokensFile, 'write https-write-token-0123456789\n');
    const backend = await h.backend(store.port, { tlsCertFile: files.certFile, tlsKeyFile: files.keyFile, tokensFile });
    expect((await call(backend.port, 'PUT', '/k', { body: 'v' })).status).toBe(401);
    expect((await call(backend.port, 'PUT', '/k', { body: 'v', headers: { Authorization: 'Bearer https-write-token-0123456789' } })).status).toBe(204);
  });
});

describe('backend HTTPS: reloads', () => {
  it('SIGHUP (reload) gives new connections the new certificate; a connection already open stays and keeps working', async () => {
    const { backend, certFile, keyFile, sink } = await httpsBackend(first, 'trace');
    const agent = keptAgent();
    const before = await call(backend.port, 'PUT', '/k', { agent, body: 'v1' });
    expect(sameSerial(before.serial, first.serial)).toBe(true);

    place(second, certFile, keyFile);
    backend.reload();
    const kept = await call(backend.port, 'GET', '/k', { agent });
    expect([kept.status, kept.text, kept.reused]).toEqual([200, 'v1', true]);
    expect(sameSerial(kept.serial, first.serial)).toBe(true);
    const fresh = await call(backend.port, 'GET', '/k');
    expect(sameSerial(fresh.serial, second.serial)).toBe(true);
    expect(sink.lines.filter((l) => l.msg === 'backend TLS certificate reloaded')).toHaveLength(1);
    expect(sink.lines.find((l) => l.msg === 'backend TLS certificate reloaded')).toMatchObject({ reason: 'SIGHUP', certFile });
    const body = (pem: string) => pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));
    for (const line of [...body(first.key), ...body(second.key)]) expect(sink.raw.join('\n')).not.toContain(line);
  });

  it('a Kubernetes symlink swap is picked up with no signal, the open connection kept', async () => {
    // The layout kubelet makes: tls.crt -> ..data/tls.crt, ..data -> ..v1/.
    const secret = join(dir, 'secret');
    mkdirSync(join(secret, '..v1'), { recursive: true });
    place(first, join(secret, '..v1', 'tls.crt'), join(secret, '..v1', 'tls.key'));
    symlinkSync('..v1', join(secret, '..data'));
    for (const f of ['tls.crt', 'tls.key']) symlinkSync(join('..data', f), join(secret, f));
    const store = await h.store();
    const backend = await h.backend(store.port, { tlsCertFile: join(secret, 'tls.crt'), tlsKeyFile: join(secret, 'tls.key') }, { filePollMs: 10 });
    const agent = keptAgent();
    expect((await call(backend.port, 'PUT', '/k', { agent, body: 'v' })).status).toBe(204);

    mkdirSync(join(secret, '..v2'));
    place(second, join(secret, '..v2', 'tls.crt'), join(secret, '..v2', 'tls.key'));
    symlinkSync('..v2', join(secret, '..data_tmp'));
    renameSync(join(secret, '..data_tmp'), join(secret, '..data'));
    rmSync(join(secret, '..v1'), { recursive: true });
    await waitUntil('the swapped certificate in use', async () => (sameSerial((await call(backend.port, 'GET', '/k')).serial, second.serial) ? true : undefined), { everyMs: 20 });
    const kept = await call(backend.port, 'GET', '/k', { agent });
    expect([kept.status, kept.reused, sameSerial(kept.serial, first.serial)]).toEqual([200, true, true]);
  });

  it('a reload that fails keeps the pair in use, is counted every time and logged once until one succeeds', async () => {
    const { backend, certFile, keyFile, sink } = await httpsBackend(first, 'trace');
    copyFileSync(second.keyFile, keyFile); // a key of another certificate
    backend.reload();
    backend.reload();
    expect(sameSerial((await call(backend.port, 'GET', '/k')).serial, first.serial)).toBe(true);
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_tls_reload_failures_total')).toBe(2);
    const failed = sink.lines.filter((l) => l.msg === 'backend TLS certificate reload failed: the ones in use stay');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.err).toBe(`BACKEND_TLS_KEY_FILE=${JSON.stringify(keyFile)} is invalid: the key does not match the certificate of BACKEND_TLS_CERT_FILE=${JSON.stringify(certFile)}`);

    rmSync(certFile);
    backend.reload();
    expect(sink.lines.filter((l) => l.msg === 'backend TLS certificate reload failed: the ones in use stay')).toHaveLength(2);
    expect(sameSerial((await call(backend.port, 'GET', '/k')).serial, first.serial)).toBe(true);

    copyFileSync(second.certFile, certFile);
    backend.reload();
    expect(sameSerial((await call(backend.port, 'GET', '/k')).serial, second.serial)).toBe(true);
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_tls_reload_failures_total')).toBe(3);
  });
});

describe('backend HTTPS: shutdown', () => {
  it('a request in progress on a TLS connection is answered before close() cuts the connection', async () => {
    // The store never answers GET: the request runs until STORE_TIMEOUT_MS, past several idle checks.
    const fake = await h.fake((line) => (line.startsWith('GET') ? { silent: true } : 'USAGE 0'));
    const files = placedPair(first);
    const backend = await h.backend(fake.port, { tlsCertFile: files.certFile, tlsKeyFile: files.keyFile, storeTimeoutMs: 1500 }, { idleCheckMs: 50 });
    const pending = call(backend.port, 'GET', '/slow');
    await waitUntil('the GET at the store', async () => (fake.received.some((l) => l.startsWith('GET')) ? true : undefined), { everyMs: 10 });
    await backend.close();
    expect((await pending).status).toBe(504);
  });
});

describe('backend HTTPS: start-up', () => {
  const refused = (env: Record<string, string>): string => {
    try {
      loadBackendConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('the settings were accepted');
  };

  it('one file without the other, an unreadable file, a file that is no PEM, a key that does not match: each names its variable', () => {
    const ok = placedPair(first);
    const notPem = join(dir, 'not-pem');
    writeFileSync(notPem, 'hello\n');
    expect(refused({ BACKEND_TLS_CERT_FILE: ok.certFile })).toBe('BACKEND_TLS_CERT_FILE is set but BACKEND_TLS_KEY_FILE is not: HTTPS needs both the certificate and its key');
    expect(refused({ BACKEND_TLS_KEY_FILE: ok.keyFile })).toBe('BACKEND_TLS_KEY_FILE is set but BACKEND_TLS_CERT_FILE is not: HTTPS needs both the certificate and its key');
    expect(refused({ BACKEND_TLS_CERT_FILE: join(dir, 'absent'), BACKEND_TLS_KEY_FILE: ok.keyFile })).toMatch(/^BACKEND_TLS_CERT_FILE=".*absent" is invalid: cannot read it \(ENOENT\)$/);
    expect(refused({ BACKEND_TLS_CERT_FILE: notPem, BACKEND_TLS_KEY_FILE: ok.keyFile })).toMatch(/^BACKEND_TLS_CERT_FILE=.* no PEM certificate in it/);
    expect(refused({ BACKEND_TLS_CERT_FILE: ok.certFile, BACKEND_TLS_KEY_FILE: notPem })).toMatch(/^BACKEND_TLS_KEY_FILE=.* no PEM private key in it/);
    expect(refused({ BACKEND_TLS_CERT_FILE: ok.certFile, BACKEND_TLS_KEY_FILE: second.keyFile })).toMatch(/^BACKEND_TLS_KEY_FILE=.* the key does not match the certificate of BACKEND_TLS_CERT_FILE=/);
    // A certificate's file as the key: a PEM, but no private key.
    expect(refused({ BACKEND_TLS_CERT_FILE: ok.certFile, BACKEND_TLS_KEY_FILE: ok.certFile })).toMatch(/^BACKEND_TLS_KEY_FILE=.* no PEM private key in it/);
  });

  it('a message never holds a byte of the key', () => {
    const ok = placedPair(first);
    const broken = join(dir, 'broken.key');
    const lines = second.key.split('\n');
    writeFileSync(broken, [lines[0], lines[1]!.slice(0, 20), lines.at(-2)].join('\n'));
    const message = refused({ BACKEND_TLS_CERT_FILE: ok.certFile, BACKEND_TLS_KEY_FILE: broken });
    expect(message).toMatch(/^BACKEND_TLS_KEY_FILE=.* the key does not load/);
    expect(message).not.toContain(lines[1]!.slice(0, 20));
  });
});
