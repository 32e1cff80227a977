// SPEC §8, the store's side of TLS: STORE_PORT speaks TLS only, client certificates are
// checked in both modes, handshake failures are counted and logged (bounded), and the
// certificate, key and CA reload on SIGHUP and on a change on disk (the symlink swap
// Kubernetes does) with no connection dropped; a reload that fails keeps the old ones.
import { copyFileSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../services/client/errors.ts';
import { StoreConnection } from '../services/client/store-connection.ts';
import { TlsMaterialSource } from '../services/client/client-tls.ts';
import { Secret } from '../services/shared/secret.ts';
import { REPLY_BOUND_BYTES } from '../services/store/network/served-connection.ts';
import { destroyAll, track } from './helpers/cleanup.ts';
import { LineClient } from './helpers/line-client.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { pem, tlsFixture } from './helpers/tls-certs.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { waitUntil } from './helpers/wait-until.ts';

afterEach(destroyAll);
const f = tlsFixture();
const newDir = tempDirs('kvstore-tls-');

const trustCa: ConnectionOptions = { ca: pem(f.ca) };
const withClientCert: ConnectionOptions = { ...trustCa, cert: pem(f.client.cert), key: pem(f.client.key) };

const tlsStore = (overrides: Parameters<typeof startTestStore>[0] = {}, deps: Parameters<typeof startTestStore>[1] = {}): Promise<TestStore> =>
  startTestStore({ tlsCertFile: f.server.cert, tlsKeyFile: f.server.key, logLevel: 'debug', ...overrides }, deps);

/** The certificate the store presents to a new connection: its subject's CN. */
async function presentedCn(port: number): Promise<string> {
  const c = await LineClient.connectTls(port, { ...withClientCert, rejectUnauthorized: false });
  const cn = (c.socket as TLSSocket).getPeerCertificate().subject.CN;
  c.destroy();
  return String(cn);
}

/** Whether a TLS connection with `options` gets a PONG (false when the handshake or the connection fails). */
async function served(port: number, options: ConnectionOptions): Promise<boolean> {
  try {
    const c = await LineClient.connectTls(port, options);
    const reply = await c.request('PING').catch(() => undefined);
    c.destroy();
    return reply === 'PONG';
  } catch {
    return false;
  }
}

const handshakeFailures = (store: TestStore) => store.service.tlsMetrics!.handshakeFailures;
const logged = (store: TestStore, msg: string) => store.logs.filter((l) => String(l.msg).startsWith(msg));

describe('store TLS: serving', () => {
  it('serves the protocol over TLS only, read by Node\'s stream (not the native poller nor the shared buffer)', async () => {
    const store = await tlsStore();
    const c = await LineClient.connectTls(store.port, trustCa);
    expect(await c.request('SET k hello')).toBe('OK');
    expect(await c.request('GET k')).toBe(`VALUE ${Buffer.from('hello').toString('base64')}`);
    c.send('PING\nPING\nPING\n');
    expect(await c.lines(3)).toEqual(['PONG', 'PONG', 'PONG']);
    expect(store.service.server.connectionFlows()[0]).toMatchObject({ sharedReads: false, nativeReads: false });
    expect((await store.admin('/readyz')).status).toBe(200);
    const metrics = (await store.admin('/metrics')).body;
    expect(metrics).toMatch(/^kvstore_tls_certificate_expiry_timestamp_seconds \d{10}$/m);
    expect(metrics).toMatch(/^kvstore_tls_reload_failures_total 0$/m);
    expect(metrics).toMatch(/^kvstore_native_io 0$/m); // the add-on is not loaded: it would see ciphertext
    expect(store.logs.find((l) => l.msg === 'kvstore ready')).toMatchObject({ tls: true, tlsClientAuth: 'none' });
  });

  it('answers what a client sent before its half-close, over TLS', async () => {
    const store = await tlsStore();
    const c = await LineClient.connectTls(store.port, trustCa);
    c.socket.end('SET a 1\nGET a\n');
    await c.closed;
    expect(c.received).toEqual(['OK', `VALUE ${Buffer.from('1').toString('base64')}`]);
  });

  it('a client that pipelines without reading: the store pauses it with bounded buffering and serves the others', async () => {
    const store = await tlsStore({ logLevel: 'warn' });
    const setup = await LineClient.connectTls(store.port, trustCa);
    expect(await setup.request(`SET big ${'x'.repeat(10_000)}`)).toBe('OK');
    const slow = await LineClient.connectTls(store.port, trustCa);
    slow.socket.pause(); // reads nothing from now on
    slow.send('GET big\n'.repeat(5000));
    const stuck = () => store.service.server.connectionFlows().find((fl) => fl.paused && fl.writableLength >= REPLY_BOUND_BYTES);
    await waitUntil('the slow reader paused', async () => stuck(), { deadlineMs: 10_000, everyMs: 5 });
    expect(stuck()!.writableLength).toBeLessThan(256 * 1024);
    for (let i = 0; i < 20; i++) expect(await setup.request('PING')).toBe('PONG');
    expect(stuck()!.writableLength).toBeLessThan(256 * 1024);
  });

  it('at MAX_CONNECTIONS a TLS client is told so and closed, and the readiness probe still passes (it is let past the limit)', async () => {
    const store = await tlsStore({ maxConnections: 1, tlsCaFile: f.ca, tlsClientAuth: 'require' });
    const first = await LineClient.connectTls(store.port, withClientCert);
    expect(await first.request('PING')).toBe('PONG');
    const second = await LineClient.connectTls(store.port, withClientCert);
    expect(await second.line()).toBe('ERROR max connections reached');
    await second.closed;
    expect((await store.admin('/readyz')).status).toBe(200);
    expect(store.service.metrics.rejectedConnections).toBe(1);
  });

  it('a plaintext client on the TLS port: counted and logged as a handshake failure, the store serves on', async () => {
    const store = await tlsStore();
    const plain = await new Promise<Socket>((resolve, reject) => {
      const s = track(netConnect({ port: store.port, host: '127.0.0.1' }));
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    });
    plain.on('error', () => {});
    plain.write('PING\n');
    await new Promise((resolve) => plain.once('close', resolve));
    await waitUntil('the failure counted', async () => (handshakeFailures(store).plaintext === 1 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    const [line] = logged(store, 'TLS handshake failed');
    expect(line).toMatchObject({ level: 40, reason: 'plaintext', remote: '127.0.0.1' });
    expect(typeof line!.remotePort).toBe('number');
    expect(await served(store.port, trustCa)).toBe(true);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_tls_handshake_failures_total\{reason="plaintext"\} 1$/m);
  });

  it('bounds the handshake-failure log lines, and counts every failure', async () => {
    const store = await tlsStore({ logLevel: 'warn' });
    for (let i = 0; i < 30; i++) {
      await new Promise<void>((resolve) => {
        const s = netConnect({ port: store.port, host: '127.0.0.1' }, () => s.write('PING\n'));
        s.on('error', () => {});
        s.once('close', () => resolve());
      });
    }
    await waitUntil('30 failures', async () => (handshakeFailures(store).plaintext === 30 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    expect(logged(store, 'TLS handshake failed')).toHaveLength(20);
  });

  it('a TLS client on a plaintext port gets a clear error', async () => {
    const store = await startTestStore({ logLevel: 'silent' });
    const conn = track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 500, reconnect: false, tls: new TlsMaterialSource(() => trustCa) }));
    const err = (await conn.ping().catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toMatch(/^store 127\.0\.0\.1:\d+: TLS handshake failed \(wrong version number\): the port does not speak TLS|TLS handshake with store .* got no answer within 500 ms: does the port speak TLS/);
  });

  it('the store\'s own certificate expired: a client refuses it, and the expiry gauge says when', async () => {
    const store = await tlsStore({ tlsCertFile: f.expired.cert, tlsKeyFile: f.expired.key });
    const conn = track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 2000, reconnect: false, tls: new TlsMaterialSource(() => trustCa) }));
    const err = (await conn.ping().catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/TLS handshake failed: certificate has expired/);
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_tls_certificate_expiry_timestamp_seconds 1577923200$/m);
  });

  it('a client trusting another CA refuses the store', async () => {
    const store = await tlsStore();
    const conn = track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 2000, reconnect: false, tls: new TlsMaterialSource(() => ({ ca: pem(f.otherCa) })) }));
    const err = (await conn.ping().catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/TLS handshake failed: .*(self-signed|unable to (get|verify))/i);
  });
});

describe('store TLS: client certificates', () => {
  it('require: a client without one or with one of another CA is refused and counted; with one of the CA it is served; the readiness probe passes', async () => {
    const store = await tlsStore({ tlsCaFile: f.ca, tlsClientAuth: 'require' });
    expect(await served(store.port, trustCa)).toBe(false);
    expect(await served(store.port, { ...trustCa, cert: pem(f.strangerClient.cert), key: pem(f.strangerClient.key) })).toBe(false);
    expect(await served(store.port, withClientCert)).toBe(true);
    await waitUntil('two refusals counted', async () => (handshakeFailures(store).certificate === 2 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    const reasons = logged(store, 'TLS handshake failed').map((l) => l.err);
    expect(reasons).toEqual([expect.stringMatching(/no client certificate/), expect.stringMatching(/client certificate refused/)]);
    expect((await store.admin('/readyz')).status).toBe(200);
  });

  it('require: a store certificate restricted to serverAuth fails the store\'s own readiness probe (SPEC §8: it needs clientAuth too)', async () => {
    const serverOnly = f.issue('server-only', { cn: 'kvstore', eku: 'serverAuth' });
    const store = await tlsStore({ tlsCertFile: serverOnly.cert, tlsKeyFile: serverOnly.key, tlsCaFile: f.ca, tlsClientAuth: 'require' });
    expect(await served(store.port, withClientCert)).toBe(true);
    expect((await store.admin('/readyz')).status).toBe(503);
    await waitUntil('the probe\'s refusal counted', async () => (handshakeFailures(store).certificate >= 1 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    expect(logged(store, 'TLS handshake failed')[0]!.err).toMatch(/client certificate refused \(UNSUPPORTED_CERTIFICATE_PURPOSE\)|INVALID_PURPOSE/);
  });

  it('require: an expired client certificate is refused', async () => {
    const store = await tlsStore({ tlsCaFile: f.ca, tlsClientAuth: 'require' });
    expect(await served(store.port, { ...trustCa, cert: pem(f.expired.cert), key: pem(f.expired.key) })).toBe(false);
    await waitUntil('the refusal counted', async () => (handshakeFailures(store).certificate === 1 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    expect(logged(store, 'TLS handshake failed')[0]!.err).toMatch(/CERT_HAS_EXPIRED/);
  });

  it('optional: a client without one is served, one with a certificate of another CA is refused', async () => {
    const store = await tlsStore({ tlsCaFile: f.ca, tlsClientAuth: 'optional' });
    expect(await served(store.port, trustCa)).toBe(true);
    expect(await served(store.port, withClientCert)).toBe(true);
    expect(await served(store.port, { ...trustCa, cert: pem(f.strangerClient.cert), key: pem(f.strangerClient.key) })).toBe(false);
    await waitUntil('the refusal counted', async () => (handshakeFailures(store).certificate === 1 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
  });

  it('with a password too: TLS, then AUTH, then commands', async () => {
    const store = await tlsStore({ tlsCaFile: f.ca, tlsClientAuth: 'require', password: new Secret('pw with spaces') });
    const tls = new TlsMaterialSource(() => withClientCert);
    const conn = track(new StoreConnection({ host: '127.0.0.1', port: store.port, timeoutMs: 2000, password: new Secret('pw with spaces'), tls }));
    await conn.set('k', 'v');
    expect((await conn.get('k'))?.toString()).toBe('v');
    expect((await store.admin('/readyz')).status).toBe(200);
  });
});

describe('store TLS: reloads', () => {
  it('SIGHUP (reload) puts a new certificate in use: open connections keep working, new ones get it', async () => {
    const dir = newDir();
    const cert = join(dir, 'tls.crt');
    const key = join(dir, 'tls.key');
    const copy = (from: { cert: string; key: string }) => {
      // Written under another name and renamed, as a deploy tool does, so no read sees half a file.
      for (const [src, dst] of [[from.cert, cert], [from.key, key]] as const) {
        const tmp = `${dst}.tmp`;
        writeFileSync(tmp, readFileSync(src));
        renameSync(tmp, dst);
      }
    };
    copy(f.server);
    const store = await tlsStore({ tlsCertFile: cert, tlsKeyFile: key }, { tlsPollMs: 60_000 });
    const before = await LineClient.connectTls(store.port, trustCa);
    expect(await before.request('SET k 1')).toBe('OK');
    expect(await presentedCn(store.port)).toBe('kvstore');
    copy(f.rotated);
    store.service.reload();
    expect(await before.request('GET k')).toBe(`VALUE ${Buffer.from('1').toString('base64')}`);
    expect(await presentedCn(store.port)).toBe('kvstore-rotated');
    expect(logged(store, 'store TLS certificate, key and CA reloaded')).toHaveLength(1);
    expect(store.service.tlsMetrics!.reloadFailures).toBe(0);
  });

  it('a Kubernetes Secret update (the ..data symlink swapped, no signal) is picked up by the poll', async () => {
    const dir = newDir();
    const version = (name: string, from: { cert: string; key: string }): string => {
      const v = join(dir, name);
      mkdirSync(v);
      copyFileSync(from.cert, join(v, 'tls.crt'));
      copyFileSync(from.key, join(v, 'tls.key'));
      return name;
    };
    symlinkSync(version('..v1', f.server), join(dir, '..data'));
    symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(dir, 'tls.key'));
    const store = await tlsStore({ tlsCertFile: join(dir, 'tls.crt'), tlsKeyFile: join(dir, 'tls.key') }, { tlsPollMs: 10 });
    const before = await LineClient.connectTls(store.port, trustCa);
    symlinkSync(version('..v2', f.rotated), join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await waitUntil('the new certificate in use', async () => ((await presentedCn(store.port)) === 'kvstore-rotated' ? true : undefined), { deadlineMs: 5000, everyMs: 20 });
    expect(await before.request('PING')).toBe('PONG');
    expect(logged(store, 'store TLS certificate, key and CA reloaded')[0]).toMatchObject({ reason: 'file changed' });
  });

  it('a key that does not match its certificate: the old ones stay in use, counted, logged once however often it is seen', async () => {
    const dir = newDir();
    const cert = join(dir, 'tls.crt');
    const key = join(dir, 'tls.key');
    copyFileSync(f.server.cert, cert);
    copyFileSync(f.server.key, key);
    const store = await tlsStore({ tlsCertFile: cert, tlsKeyFile: key }, { tlsPollMs: 10 });
    copyFileSync(f.rotated.cert, cert); // the certificate rotated, its key not (yet)
    await waitUntil('the failure counted', async () => (store.service.tlsMetrics!.reloadFailures >= 1 ? true : undefined), { deadlineMs: 5000, everyMs: 10 });
    store.service.reload();
    store.service.reload();
    expect(store.service.tlsMetrics!.reloadFailures).toBe(3);
    const failures = logged(store, 'store TLS certificate, key and CA reload failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]!.err).toMatch(/STORE_TLS_KEY_FILE=.* is invalid: the key does not match the certificate of STORE_TLS_CERT_FILE/);
    expect(await presentedCn(store.port)).toBe('kvstore');
    expect((await store.admin('/metrics')).body).toMatch(/^kvstore_tls_reload_failures_total 3$/m);
    copyFileSync(f.rotated.key, key); // the key follows
    await waitUntil('the new certificate in use', async () => ((await presentedCn(store.port)) === 'kvstore-rotated' ? true : undefined), { deadlineMs: 5000, everyMs: 20 });
  });

  it('no log line carries key material or the password', async () => {
    const store = await tlsStore({ tlsCaFile: f.ca, tlsClientAuth: 'require', password: new Secret('the store password') });
    await served(store.port, trustCa);
    store.service.reload();
    const text = JSON.stringify(store.logs);
    expect(store.logs.length).toBeGreaterThanOrEqual(3);
    expect(text).not.toMatch(/PRIVATE KEY/);
    expect(text).not.toContain(pem(f.server.key).split('\n')[1]!);
    expect(text).not.toContain('the store password');
  });
});
