// SPEC §8 from the clients' side: the client library, the backend's ring and `kv` over
// TLS (KV_STORE_TLS and its files, kv's --tls flags); a reconnect does its handshake and
// AUTH before any queued command; a client certificate rotated on disk is used by the
// next connection; a TLS, password-protected ring of three through the backend survives a
// shard restarted mid-load; and no log line of any service carries key material.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TlsFileSource } from '../services/client/client-tls.ts';
import { StoreConnection } from '../services/client/store-connection.ts';
import { loadBackendConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { Secret } from '../services/shared/secret.ts';
import { backendHarness, logSink, send as sendHttp, statusOf } from './helpers/backend-harness.ts';
import { destroyAll, track } from './helpers/cleanup.ts';
import { numberedKeys } from './helpers/keys.ts';
import { runKvProcess } from './helpers/kv-process.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { tlsFixture } from './helpers/tls-certs.ts';
import { waitUntil } from './helpers/wait-until.ts';

afterEach(destroyAll);
const h = backendHarness();
const f = tlsFixture();
const dir = mkdtempSync(join(tmpdir(), 'kv-client-tls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PASSWORD = 'ring password';
const TOKEN = 'a-write-token-for-the-ring-test';
const files = { ca: { path: f.ca, env: 'KV_STORE_TLS_CA_FILE' }, cert: { path: f.client.cert, env: 'KV_STORE_TLS_CERT_FILE' }, key: { path: f.client.key, env: 'KV_STORE_TLS_KEY_FILE' } };

const secureStore = (overrides: Parameters<typeof startTestStore>[0] = {}): Promise<TestStore> =>
  startTestStore({ tlsCertFile: f.server.cert, tlsKeyFile: f.server.key, tlsCaFile: f.ca, tlsClientAuth: 'require', password: new Secret(PASSWORD), ...overrides });

describe('client library over TLS', () => {
  it('a reconnect does its handshake and AUTH before the commands queued while it connects', async () => {
    const store = await secureStore();
    const conn = track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 2000, password: new Secret(PASSWORD), tls: new TlsFileSource(files) }));
    await conn.set('k', 'v');
    for (const c of store.service.server.connectionFlows()) expect(c).toBeDefined();
    store.service.server.destroy(); // every socket cut; the listener too
    await waitUntil('the connection lost', async () => (conn.state !== 'connected' ? true : undefined), { deadlineMs: 5000, everyMs: 5 });
    const again = await startTestStore({ ...store.config, port: store.port });
    await waitUntil('reconnected', async () => (conn.state === 'connected' ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    const replies = await Promise.all([conn.set('a', '1'), conn.get('a'), conn.ping()]);
    expect(replies[1]?.toString()).toBe('1');
    expect(again.service.metrics.authFailures).toBe(0);
    expect(again.service.tlsMetrics!.handshakeFailures).toEqual({ plaintext: 0, certificate: 0, timeout: 0, other: 0 });
  });

  it('a client certificate rotated on disk is used by the next connection; the open one stays', async () => {
    const store = await secureStore();
    const cert = join(dir, 'client.crt');
    const key = join(dir, 'client.key');
    copyFileSync(f.client.cert, cert);
    copyFileSync(f.client.key, key);
    const tls = new TlsFileSource({ ca: files.ca, cert: { path: cert, env: 'KV_STORE_TLS_CERT_FILE' }, key: { path: key, env: 'KV_STORE_TLS_KEY_FILE' } });
    const open = (): StoreConnection => track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 2000, reconnect: false, password: new Secret(PASSWORD), tls }));
    const first = open();
    expect(await first.ping()).toBeUndefined();
    // Rotated to a certificate of a CA the store does not trust: the next connection presents it.
    copyFileSync(f.strangerClient.cert, cert);
    copyFileSync(f.strangerClient.key, key);
    const refused = await open().ping().catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/right after the TLS handshake, before any reply: it may have refused this client's certificate/);
    await waitUntil('the refusal counted', async () => (store.service.tlsMetrics!.handshakeFailures.certificate === 1 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    expect(await first.ping()).toBeUndefined();
    copyFileSync(f.client.cert, cert);
    copyFileSync(f.client.key, key);
    expect(await open().ping()).toBeUndefined();
  });
});

describe('the public TlsFileSource.fromPaths', () => {
  it('connects with PEM paths, and names the option of a file it cannot read', async () => {
    const store = await secureStore();
    const tls = TlsFileSource.fromPaths({ caFile: f.ca, certFile: f.client.cert, keyFile: f.client.key });
    const conn = track(new StoreConnection({ host: 'localhost', port: store.port, timeoutMs: 2000, password: new Secret(PASSWORD), tls }));
    expect(await conn.ping()).toBeUndefined();
    expect(() => TlsFileSource.fromPaths({ caFile: join(dir, 'none.pem') })).toThrow(/^caFile=".*none\.pem" is invalid: cannot read it \(ENOENT\)/);
  });
});

describe('the backend over TLS', () => {
  it('end to end: HTTPS and tokens on the backend, a TLS, password-protected ring of three with client certificates behind it: served, ready, and back after a shard restarted mid-load', async () => {
    const stores = await Promise.all([0, 1, 2].map(() => secureStore({ logLevel: 'trace' })));
    const sink = logSink();
    const logger = createLogger({ name: 'kvbackend', level: 'trace', destination: sink });
    const tokensFile = join(dir, 'ring-tokens');
    writeFileSync(tokensFile, `write ${TOKEN}\n`);
    const backend = await h.backend(
      stores.map((s) => s.port),
      {
        storePassword: new Secret(PASSWORD),
        storeTls: true,
        storeTlsCaFile: f.ca,
        storeTlsCertFile: f.client.cert,
        storeTlsKeyFile: f.client.key,
        storeTimeoutMs: 2000,
        tlsCertFile: f.server.cert,
        tlsKeyFile: f.server.key,
        tokensFile,
      },
      { logger },
    );
    const caPem = readFileSync(f.ca, 'utf8');
    const send = (port: number, method: string, path: string, body?: string) => sendHttp(port, method, path, body, { authorization: `Bearer ${TOKEN}` }, caPem);
    expect((await sendHttp(backend.port, 'GET', '/k', undefined, {}, caPem)).status).toBe(401);
    await expect(sendHttp(backend.port, 'GET', '/k', undefined, { authorization: `Bearer ${TOKEN}` })).rejects.toThrow(); // plain HTTP on the HTTPS port
    const keys = numberedKeys(60);
    for (const key of keys) expect((await send(backend.port, 'PUT', `/${key}`, `v-${key}`)).status).toBe(204);
    for (const s of stores) expect(s.service.engine.keyCount).toBeGreaterThan(0);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);

    // Load while shard 1 restarts: its keys fail (503) while it is down, the others serve on.
    let stop = false;
    const statuses: number[] = [];
    const load = (async () => {
      for (let i = 0; !stop; i++) {
        const key = keys[i % keys.length]!;
        statuses.push((await send(backend.port, 'GET', `/${key}`)).status);
      }
    })();
    await waitUntil('some load served', async () => (statuses.length > 50 ? true : undefined), { deadlineMs: 10_000, everyMs: 10 });
    const { port } = stores[1]!;
    stores[1]!.service.destroy();
    await waitUntil('the shard seen down', async () => (statuses.slice(-20).some((s) => s === 503) ? true : undefined), { deadlineMs: 10_000, everyMs: 10 });
    const restarted = await secureStore({ port, logLevel: 'trace' });
    await waitUntil('the shard back', async () => (restarted.service.server.connectionCount >= 4 ? true : undefined), { deadlineMs: 10_000, everyMs: 20 });
    const after = statuses.length;
    await waitUntil('load served after the restart', async () => (statuses.length > after + 100 ? true : undefined), { deadlineMs: 10_000, everyMs: 10 });
    stop = true;
    await load;
    expect(statuses.slice(after + 20).every((s) => s === 200 || s === 404)).toBe(true); // the restarted shard lost its keys: 404
    expect(new Set(statuses)).not.toContain(500);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    expect(restarted.service.metrics.authFailures).toBe(0);
    expect(restarted.service.tlsMetrics!.handshakeFailures).toEqual({ plaintext: 0, certificate: 0, timeout: 0, other: 0 });

    const text = JSON.stringify([...sink.lines, ...stores.flatMap((s) => s.logs), ...restarted.logs]);
    expect(text).not.toMatch(/PRIVATE KEY/);
    for (const k of [f.client.key, f.server.key]) expect(text).not.toContain(readFileSync(k, 'utf8').split('\n')[1]!);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(TOKEN);
  });

  it('refuses to start with a TLS file but no KV_STORE_TLS, a certificate without its key, or a key that does not match', () => {
    expect(() => loadBackendConfig({ KV_STORE_TLS_CA_FILE: f.ca })).toThrow(/KV_STORE_TLS_CA_FILE is set but KV_STORE_TLS is not true/);
    expect(() => loadBackendConfig({ KV_STORE_TLS: 'true', KV_STORE_TLS_CERT_FILE: f.client.cert })).toThrow(/KV_STORE_TLS_CERT_FILE is set but KV_STORE_TLS_KEY_FILE is not/);
    expect(() => loadBackendConfig({ KV_STORE_TLS: 'true', KV_STORE_TLS_CERT_FILE: f.client.cert, KV_STORE_TLS_KEY_FILE: f.server.key })).toThrow(
      /KV_STORE_TLS_KEY_FILE=".*server\.key" is invalid: the key does not match the certificate of KV_STORE_TLS_CERT_FILE/,
    );
    expect(() => loadBackendConfig({ KV_STORE_TLS: 'true', KV_STORE_TLS_CA_FILE: join(dir, 'missing.pem') })).toThrow(/KV_STORE_TLS_CA_FILE=".*missing\.pem" is invalid: cannot read it \(ENOENT\)/);
    expect(() => loadBackendConfig({ KV_STORE_TLS: 'yes' })).toThrow(/KV_STORE_TLS="yes" is invalid: expected true or false/);
  });
});

describe('kv over TLS', () => {
  const kv = (args: string[], env: Record<string, string> = {}) =>
    runKvProcess(args, { env: { KV_STORE_PASSWORD: PASSWORD, KV_STORE_TLS: '', KV_STORE_TLS_CA_FILE: '', KV_STORE_TLS_CERT_FILE: '', KV_STORE_TLS_KEY_FILE: '', ...env } });

  it('takes --tls-ca-file, --tls-cert-file, --tls-key-file, and the KV_STORE_TLS variables', async () => {
    const store = await secureStore();
    const address = `127.0.0.1:${store.port}`;
    expect(await kv(['--store', address, '--tls-ca-file', f.ca, '--tls-cert-file', f.client.cert, '--tls-key-file', f.client.key, 'set', 'k', 'v'])).toMatchObject({ code: 0 });
    expect(await kv(['get', 'k'], { KV_STORE: address, KV_STORE_TLS: 'true', KV_STORE_TLS_CA_FILE: f.ca, KV_STORE_TLS_CERT_FILE: f.client.cert, KV_STORE_TLS_KEY_FILE: f.client.key })).toMatchObject({
      code: 0,
      out: 'v',
    });
    const noCert = await kv(['--store', address, '--tls', '--tls-ca-file', f.ca, 'ping']);
    expect(noCert.code).toBe(2);
  });

  it('kv bench authenticates and speaks TLS as the other commands do, and says when the store refuses its password', async () => {
    const store = await secureStore();
    const tlsArgs = ['--store', `127.0.0.1:${store.port}`, '--tls-ca-file', f.ca, '--tls-cert-file', f.client.cert, '--tls-key-file', f.client.key];
    const bench = ['bench', '-c', '4', '-P', '8', '-n', '2000', '--keyspace', '500', '--warmup', '0', '--json'];
    const ok = await kv([...tlsArgs, ...bench]);
    expect(ok.code, ok.stderr).toBe(0);
    const result = JSON.parse(ok.out) as { ok: boolean; requests: number; errors: number; wrongReplies: number };
    expect(result).toMatchObject({ ok: true, requests: 2000, errors: 0, wrongReplies: 0 });
    expect(store.service.metrics.authFailures).toBe(0);
    const wrong = await kv([...tlsArgs, ...bench], { KV_STORE_PASSWORD: 'not the password' });
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/refused AUTH: ERROR invalid password/);
    expect(wrong.stderr + wrong.out).not.toContain('not the password');
  });

  it('--tls against a plaintext store: exit 2 with a message saying the port does not speak TLS', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const r = await kv(['--store', `127.0.0.1:${store.port}`, '--tls', '--timeout', '500', 'ping']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/does not speak TLS|does the port speak TLS/);
    const unreadable = await kv(['--store', `127.0.0.1:${store.port}`, '--tls-ca-file', join(dir, 'none.pem'), 'ping']);
    expect(unreadable.stderr).toMatch(/--tls-ca-file=".*none\.pem" is invalid: cannot read it/);
  });
});
