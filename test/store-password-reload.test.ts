// SPEC §8: the password file is read again on SIGHUP and when it changes on disk (the
// symlink swap Kubernetes does for a mounted Secret), without dropping a connection; a
// reload that fails keeps the password in use, is counted and logged once.
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { destroyAll } from './helpers/cleanup.ts';
import { LineClient } from './helpers/line-client.ts';
import { startServiceProcess, storeScript, freePort } from './helpers/service-process.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

afterEach(destroyAll);
const newDir = tempDirs('kvstore-reload-');

const OLD = 'the old password';
const NEW = 'the new password';

/** Whether a fresh connection is let in with `password`. */
async function accepts(store: { port: number }, password: string): Promise<boolean> {
  const c = await LineClient.connect(store.port);
  const reply = await c.request(`AUTH ${password}`);
  c.destroy();
  return reply === 'OK';
}

async function authenticated(store: TestStore, password: string): Promise<LineClient> {
  const c = await store.client();
  expect(await c.request(`AUTH ${password}`)).toBe('OK');
  return c;
}

const logged = (store: TestStore, msg: string) => store.logs.filter((l) => String(l.msg).startsWith(msg));

describe('store password file: reloads', () => {
  it('SIGHUP (reload) switches to the new password; connections already in stay in, old and new alike', async () => {
    const file = join(newDir(), 'password');
    writeFileSync(file, `${OLD}\n`);
    const store = await startTestStore({ passwordFile: file, logLevel: 'debug' });
    const before = await authenticated(store, OLD);
    const locked = await store.client(); // connected, not yet authenticated
    writeFileSync(file, `${NEW}\n`);
    store.service.reload();
    expect(await before.request('PING')).toBe('PONG');
    expect(await locked.request(`AUTH ${OLD}`)).toBe('ERROR invalid password');
    expect(await locked.request(`AUTH ${NEW}`)).toBe('OK');
    expect(await accepts(store, OLD)).toBe(false);
    expect(await accepts(store, NEW)).toBe(true);
    expect(logged(store, 'store password reloaded')).toHaveLength(1);
    expect(JSON.stringify(store.logs)).not.toContain(NEW);
    expect(JSON.stringify(store.logs)).not.toContain(OLD);
  });

  it('during a rotation the file holds the new password and the old one: both let in, until the old line goes', async () => {
    const file = join(newDir(), 'password');
    writeFileSync(file, `${OLD}\n`);
    const store = await startTestStore({ passwordFile: file, logLevel: 'debug' });
    const before = await authenticated(store, OLD);
    // Step 1: the new password first, the old one still accepted.
    writeFileSync(file, `${NEW}\n${OLD}\n`);
    store.service.reload();
    expect(await accepts(store, NEW)).toBe(true);
    expect(await accepts(store, OLD)).toBe(true);
    expect(await accepts(store, `${NEW}\n${OLD}`.split('\n').join(' '))).toBe(false);
    expect(logged(store, 'store password reloaded').at(-1)).toMatchObject({ changed: true, accepted: 2 });
    // Step 2 (the clients have the new one): the old line goes.
    writeFileSync(file, NEW);
    store.service.reload();
    expect(await accepts(store, NEW)).toBe(true);
    expect(await accepts(store, OLD)).toBe(false);
    expect(logged(store, 'store password reloaded').at(-1)).toMatchObject({ changed: true, accepted: 1 });
    expect(await before.request('PING')).toBe('PONG');
    // Three lines is no rotation: refused, the passwords in use kept.
    writeFileSync(file, `${NEW}\n${OLD}\nthird\n`);
    store.service.reload();
    expect(String(logged(store, 'store password reload failed')[0]!.err)).toMatch(/holds 3 lines/);
    expect(await accepts(store, NEW)).toBe(true);
    expect(JSON.stringify(store.logs)).not.toContain(NEW);
    expect(JSON.stringify(store.logs)).not.toContain(OLD);
  });

  it('a store started during a rotation accepts both lines of its file', async () => {
    const file = join(newDir(), 'password');
    writeFileSync(file, `${NEW}\r\n${OLD}\r\n`);
    const store = await startTestStore({ passwordFile: file });
    expect(await accepts(store, NEW)).toBe(true);
    expect(await accepts(store, OLD)).toBe(true);
    expect(await accepts(store, 'neither')).toBe(false);
  });

  it('a change on disk is picked up with no signal: a file rewritten, and a Kubernetes symlink swap', async () => {
    // The layout kubelet makes: password -> ..data/password, ..data -> ..<timestamp>/.
    const dir = newDir();
    mkdirSync(join(dir, '..v1'));
    writeFileSync(join(dir, '..v1', 'password'), OLD);
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync(join('..data', 'password'), join(dir, 'password'));
    const store = await startTestStore({ passwordFile: join(dir, 'password') }, { passwordPollMs: 10 });
    const kept = await authenticated(store, OLD);

    // The swap: a new directory, a new symlink to it, renamed over ..data in one step.
    mkdirSync(join(dir, '..v2'));
    writeFileSync(join(dir, '..v2', 'password'), NEW);
    symlinkSync('..v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..v1'), { recursive: true });
    await waitUntil('the swapped password in use', async () => logged(store, 'store password reloaded').length === 1 || undefined, { everyMs: 10 });
    expect(logged(store, 'store password reloaded')[0]).toMatchObject({ reason: 'file changed' });
    expect(await accepts(store, NEW)).toBe(true);
    expect(await accepts(store, OLD)).toBe(false);
    expect(await kept.request('PING')).toBe('PONG');

    // Rewritten in place.
    writeFileSync(join(dir, '..v2', 'password'), `${OLD} again\n`);
    await waitUntil('the rewritten password in use', async () => logged(store, 'store password reloaded').length === 2 || undefined, { everyMs: 10 });
    expect(await accepts(store, `${OLD} again`)).toBe(true);
  });

  it('a reload that fails keeps the password in use, is counted each time and logged once', async () => {
    const file = join(newDir(), 'password');
    writeFileSync(file, OLD);
    const store = await startTestStore({ passwordFile: file });
    writeFileSync(file, '\n'); // empty
    store.service.reload();
    store.service.reload();
    rmSync(file);
    store.service.reload(); // another failure: a different reason, logged too
    store.service.reload();
    expect(await accepts(store, OLD)).toBe(true);
    expect(store.service.metrics.passwordReloadFailures).toBe(4);
    const failures = logged(store, 'store password reload failed');
    expect(failures.map((l) => String(l.err))).toEqual([expect.stringMatching(/it is empty/), expect.stringMatching(/cannot read it \(ENOENT\)/)]);
    const metrics = (await store.admin('/metrics')).body;
    expect(metrics).toMatch(/^kvstore_password_reload_failures_total 4$/m);
    // Fixed: the next reload takes it, and a later failure is logged again.
    writeFileSync(file, NEW);
    store.service.reload();
    expect(await accepts(store, NEW)).toBe(true);
    writeFileSync(file, '');
    store.service.reload();
    expect(logged(store, 'store password reload failed')).toHaveLength(3);
  });

  it('the store process reloads on SIGHUP and keeps running', async () => {
    const file = join(newDir(), 'password');
    writeFileSync(file, OLD);
    const port = await freePort();
    const p = await startServiceProcess(storeScript, { STORE_PORT: String(port), STORE_METRICS_PORT: '0', STORE_PASSWORD_FILE: file, STORE_WARMUP_KEYS: '0' }, STORE_READY);
    try {
      const store = { port };
      const kept = await LineClient.connect(port);
      expect(await kept.request(`AUTH ${OLD}`)).toBe('OK');
      writeFileSync(file, NEW);
      process.kill(p.pid, 'SIGHUP');
      await waitUntil('the reload logged', async () => p.logs.some((l) => String(l.msg).startsWith('store password reloaded')) || undefined, { everyMs: 20 });
      expect(await accepts(store, NEW)).toBe(true);
      expect(await kept.request('PING')).toBe('PONG');
      kept.destroy();
      expect(await p.stop('SIGTERM')).toBe(0);
    } finally {
      p.child.kill('SIGKILL');
    }
  });
});
