// SPEC §8 from the client library's side: AUTH first on every socket, before any
// queued command; a refused password is a transport failure that names no password.
import { afterEach, describe, expect, it } from 'vitest';
import { StoreAuthError } from '../services/client/errors.ts';
import { StoreConnection } from '../services/client/store-connection.ts';
import type { ConnectionState } from '../services/client/store-socket.ts';
import { Secret } from '../services/shared/secret.ts';
import { destroyAll, track } from './helpers/cleanup.ts';
import { startFakeStore } from './helpers/fake-store.ts';
import { startTestStore } from './helpers/store-harness.ts';

afterEach(destroyAll);

const PASSWORD = 'a client password';

function connection(port: number, password: string | undefined, extra: Partial<ConstructorParameters<typeof StoreConnection>[0]> = {}): StoreConnection {
  return track(new StoreConnection({ host: '127.0.0.1', port, timeoutMs: 2000, password: password === undefined ? undefined : new Secret(password), ...extra }));
}

describe('client library: the store password', () => {
  it('authenticates, then serves commands', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const conn = connection(store.port, PASSWORD);
    await conn.set('k', 'v');
    expect((await conn.get('k'))?.toString()).toBe('v');
    expect(store.service.metrics.authFailures).toBe(0);
  });

  it('a wrong password fails every command with StoreAuthError, told once per socket, naming no password', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const failures: StoreAuthError[] = [];
    const conn = connection(store.port, 'not the password', { reconnect: false, onAuthFailure: (err) => failures.push(err) });
    const err = await conn.get('k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreAuthError);
    expect((err as Error).message).toMatch(/refused the password \(it replied ERROR invalid password\)/);
    expect((err as Error).message).not.toContain('not the password');
    expect(failures).toHaveLength(1);
    expect(store.service.metrics.authFailures).toBe(1);
  });

  it('no password against a store that wants one: StoreAuthError saying so', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const conn = connection(store.port, undefined, { reconnect: false });
    const err = await conn.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreAuthError);
    expect((err as Error).message).toMatch(/requires a password .*: none is set/);
  });

  it('a password against a store without one serves (the store answers `authentication not enabled`)', async () => {
    const store = await startTestStore();
    const conn = connection(store.port, PASSWORD);
    await conn.ping();
  });

  it('a reconnect sends AUTH before the commands queued while it connected', async () => {
    const fake = await startFakeStore((line) => (line.startsWith('AUTH ') ? 'OK' : line === 'PING' ? 'PONG' : 'OK'));
    let onConnecting: (() => void) | undefined;
    const conn = connection(fake.port, PASSWORD, {
      onStateChange: (state: ConnectionState) => {
        if (state === 'connecting') onConnecting?.();
      },
    });
    await conn.ping();
    expect(fake.received).toEqual([`AUTH ${PASSWORD}`, 'PING']);
    // The store drops the connection; commands issued while the new socket connects wait for it.
    const queued = new Promise<Promise<void>[]>((resolve) => {
      onConnecting = () => {
        onConnecting = undefined;
        resolve([conn.set('a', '1'), conn.set('b', '2')]);
      };
    });
    for (const s of fake.sockets) s.destroy();
    await Promise.all(await queued);
    expect(fake.received).toEqual([`AUTH ${PASSWORD}`, 'PING', `AUTH ${PASSWORD}`, 'SET a 1', 'SET b 2']);
    await fake.close();
  });

  it('commands queued behind a refused AUTH are rejected and never sent', async () => {
    let auths = 0;
    const fake = await startFakeStore((line) => (line.startsWith('AUTH ') ? (++auths === 1 ? 'OK' : 'ERROR invalid password') : 'PONG'));
    let onConnecting: (() => void) | undefined;
    const conn = connection(fake.port, PASSWORD, {
      onStateChange: (state: ConnectionState) => {
        if (state === 'connecting') onConnecting?.();
      },
    });
    await conn.ping();
    const queued = new Promise<Promise<unknown>[]>((resolve) => {
      onConnecting = () => {
        onConnecting = undefined;
        resolve([conn.set('a', '1').catch((e: unknown) => e), conn.ping().catch((e: unknown) => e)]);
      };
    });
    for (const s of fake.sockets) s.destroy();
    const results = await Promise.all(await queued);
    for (const r of results) expect(r).toBeInstanceOf(StoreAuthError);
    // The second AUTH went alone: had the commands been pipelined behind it, the fake store would have read them too.
    expect(fake.received).toEqual([`AUTH ${PASSWORD}`, 'PING', `AUTH ${PASSWORD}`]);
    conn.destroy();
    await fake.close();
  });
});
