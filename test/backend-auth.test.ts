// SPEC §8 end to end: the backend and `kv` against password-protected stores, one and a
// ring of three; a wrong password is a shard down with its reason logged once; and no
// log line of any service, at trace level, carries the password.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Secret } from '../services/shared/secret.ts';
import { createLogger } from '../services/shared/logger.ts';
import { tempFiles } from './helpers/temp-dirs.ts';
import { backendHarness, logSink, send, statusOf } from './helpers/backend-harness.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { runKvProcess } from './helpers/kv-process.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { numberedKeys } from './helpers/keys.ts';

afterEach(destroyAll);
const h = backendHarness();

const PASSWORD = 'ring password with spaces';
const passwordFile = tempFiles('kv-password-');

async function ringOfThree(level: 'silent' | 'trace' = 'silent'): Promise<TestStore[]> {
  return Promise.all([0, 1, 2].map(() => startTestStore({ password: new Secret(PASSWORD), logLevel: level })));
}

describe('the backend against password-protected stores', () => {
  it('serves a ring of three with the password, readiness and health included', async () => {
    const stores = await ringOfThree();
    const backend = await h.backend(stores.map((s) => s.port), { storePassword: new Secret(PASSWORD) });
    const keys = numberedKeys(30);
    for (const key of keys) expect((await send(backend.port, 'PUT', `/${key}`, `v-${key}`)).status).toBe(204);
    for (const key of keys) expect((await send(backend.port, 'GET', `/${key}`)).text).toBe(`v-${key}`);
    // Every shard got some keys, so every shard's pool authenticated.
    for (const s of stores) expect(s.service.engine.keyCount).toBeGreaterThan(0);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    const health = await send(backend.metricsPort, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(stores.reduce((n, s) => n + s.service.metrics.authFailures, 0)).toBe(0);
  });

  it('takes KV_STORE_PASSWORD_FILE', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const { loadBackendConfig } = await import('../services/config/config.ts');
    const config = loadBackendConfig({ KV_STORE_PASSWORD_FILE: passwordFile('backend', `${PASSWORD}\n`) });
    const backend = await h.backend(store.port, { storePassword: config.storePassword });
    expect((await send(backend.port, 'PUT', '/k', 'v')).status).toBe(204);
    // The store's own file during a rotation (new, then old): the client sends the first line.
    const rotating = loadBackendConfig({ KV_STORE_PASSWORD_FILE: passwordFile('rotating', `${PASSWORD}\nthe old one\n`) });
    expect(rotating.storePassword?.reveal()).toBe(PASSWORD);
  });

  it('a wrong password: the shard is down (503), readiness fails, and the reason is logged once per shard, not the password', async () => {
    const stores = await ringOfThree();
    const sink = logSink();
    const logger = createLogger({ name: 'kvbackend', level: 'trace', destination: sink });
    const backend = await h.backend(stores.map((s) => s.port), { storePassword: new Secret('a wrong password') }, { logger });
    expect((await send(backend.port, 'GET', '/k')).status).toBe(503);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(503);
    // Each pool keeps retrying (with backoff): several refusals per shard, one log line each.
    await waitUntil('several refusals on every shard', async () => stores.every((s) => s.service.metrics.authFailures >= 8) || undefined, { everyMs: 50 });
    const refused = sink.lines.filter((l) => String(l.msg).startsWith('store shard down: authentication failed'));
    expect(refused.map((l) => l.shard).sort()).toEqual(stores.map((s) => `127.0.0.1:${s.port}`).sort());
    expect(String(refused[0]!.reason)).toMatch(/refused the password \(it replied ERROR invalid password\)/);
    expect(sink.raw.join('\n')).not.toContain('a wrong password');
  });

  it('no password against a store that wants one: shard down, reason says a password is required', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const sink = logSink();
    const logger = createLogger({ name: 'kvbackend', level: 'info', destination: sink });
    const backend = await h.backend(store.port, {}, { logger });
    expect((await send(backend.port, 'GET', '/k')).status).toBe(503);
    await waitUntil('the refusal logged', async () => sink.lines.some((l) => String(l.msg).startsWith('store shard down: authentication failed')) || undefined, { everyMs: 50 });
    const line = sink.lines.find((l) => String(l.msg).startsWith('store shard down'))!;
    expect(String(line.reason)).toMatch(/requires a password .*none is set/);
  });

  it('no log line of the stores or the backend, at trace level, holds the password, through a right and a wrong one', async () => {
    const stores = await ringOfThree('trace');
    const sink = logSink();
    const logger = createLogger({ name: 'kvbackend', level: 'trace', destination: sink });
    const good = await h.backend(stores.map((s) => s.port), { storePassword: new Secret(PASSWORD) }, { logger });
    for (const key of numberedKeys(10)) await send(good.port, 'PUT', `/${key}`, 'v');
    await send(good.metricsPort, 'GET', '/healthz');
    await send(good.metricsPort, 'GET', '/metrics');
    const bad = await h.backend(stores.map((s) => s.port), { storePassword: new Secret(`${PASSWORD}!`) }, { logger });
    await send(bad.port, 'GET', '/k');
    await waitUntil('refusals on every shard', async () => stores.every((s) => s.service.metrics.authFailures >= 4) || undefined, { everyMs: 50 });
    const lines = [...sink.raw, ...stores.flatMap((s) => s.logs.map((l) => JSON.stringify(l)))];
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) expect(line).not.toContain(PASSWORD);
    const metrics = await Promise.all(stores.map((s) => s.admin('/metrics')));
    for (const m of metrics) expect(m.body).not.toContain(PASSWORD);
  });
});

describe('kv against a password-protected store and ring', () => {
  const kv = (store: string, args: string[], env: Record<string, string> = {}) =>
    runKvProcess(args, { env: { KV_STORE: store, KV_STORE_PASSWORD: '', KV_STORE_PASSWORD_FILE: '', ...env } });

  it('--password-file, KV_STORE_PASSWORD_FILE and KV_STORE_PASSWORD each work, over a ring too', async () => {
    const stores = await ringOfThree();
    const ring = stores.map((s, i) => `s${i}=127.0.0.1:${s.port}`).join(',');
    const file = passwordFile('kv', `${PASSWORD}\n`);
    expect(await kv(ring, ['set', 'k', 'v', '--password-file', file])).toMatchObject({ code: 0 });
    expect(await kv(ring, ['get', 'k'], { KV_STORE_PASSWORD_FILE: file })).toMatchObject({ code: 0, out: 'v' });
    expect(await kv(ring, ['usage'], { KV_STORE_PASSWORD: PASSWORD })).toMatchObject({ code: 0 });
    const repl = await runKvProcess(['--password-file', file], { env: { KV_STORE: ring }, input: 'GET k\nAUTH typed here\nPING\n' });
    expect(repl.code).toBe(0);
    expect(repl.out).toMatch(/^"?v"?\n/);
    expect(repl.stderr).toMatch(/AUTH is sent by kv itself/);
  });

  it('a wrong or missing password: exit 2 with a clear message that holds no password', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const address = `127.0.0.1:${store.port}`;
    const wrong = await kv(address, ['get', 'k'], { KV_STORE_PASSWORD: 'not it at all' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/refused the password \(it replied ERROR invalid password\)/);
    expect(wrong.stderr + wrong.out).not.toContain('not it at all');
    const none = await kv(address, ['ping']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/requires a password/);
    const both = await kv(address, ['ping'], { KV_STORE_PASSWORD: 'x1', KV_STORE_PASSWORD_FILE: passwordFile('both', 'x2') });
    expect(both.stderr).toMatch(/KV_STORE_PASSWORD and KV_STORE_PASSWORD_FILE are both set/);
    const help = await kv(address, ['--help']);
    expect(help.out).toMatch(/--password-file <path>/);
    expect(help.out).toMatch(/visible to every\s+user of the machine \(ps\)/);
  });
});
