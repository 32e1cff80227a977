// SPEC §8: the store's password. The AUTH state machine over TCP, the password file,
// the readiness probe, the metrics, and the password in no log line.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadStoreConfig } from '../services/config/config.ts';
import { ConfigError } from '../services/shared/config-error.ts';
import { Secret } from '../services/shared/secret.ts';
import { COMMAND_TABLE } from '../services/protocol/command-table.ts';
import { tempFiles } from './helpers/temp-dirs.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

afterEach(destroyAll);

const PASSWORD = 'correct horse battery staple';

/** A well-formed line of each command but AUTH and QUIT. */
const COMMAND_LINES = COMMAND_TABLE.filter((c) => c.name !== 'AUTH' && c.name !== 'QUIT').map((c) =>
  ({ none: c.name, key: `${c.name} k`, 'key seconds': `${c.name} k 10`, 'key value': `${c.name} k v`, 'key seconds value': `${c.name} k 10 v`, password: `${c.name} p` })[c.args],
);

const metric = (body: string, series: string): number => {
  const line = body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
};

describe('store password: AUTH before anything but QUIT', () => {
  it('answers every command, known or not, with `ERROR authentication required` until AUTH, then serves', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    for (const line of [...COMMAND_LINES, 'get k', 'NOPE x', '', '   ', 'SET bad key with spaces']) {
      expect(await c.request(line), line).toBe('ERROR authentication required');
    }
    expect(await c.request(`AUTH ${PASSWORD}`)).toBe('OK');
    expect(await c.request('SET k v')).toBe('OK');
    expect(await c.request('GET k')).toBe('VALUE dg==');
    expect(await c.request('PING')).toBe('PONG');
    // Nothing ran before AUTH: the key holds the value set after it.
    expect(store.service.engine.keyCount).toBe(1);
    const body = (await store.admin('/metrics')).body;
    expect(metric(body, 'kvstore_protocol_errors_total{reason="authentication_required"}')).toBe(COMMAND_LINES.length + 5);
    expect(metric(body, 'kvstore_commands_total{command="AUTH",result="ok"}')).toBe(1);
    expect(metric(body, 'kvstore_auth_failures_total')).toBe(0);
  });

  it('a wrong password gets `ERROR invalid password`, is counted, and the connection stays locked; the right one then works', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    expect(await c.request('AUTH wrong')).toBe('ERROR invalid password');
    expect(await c.request('GET k')).toBe('ERROR authentication required');
    expect(await c.request(`AUTH ${PASSWORD} `)).toBe('ERROR invalid password'); // a trailing space is part of it
    expect(await c.request(`AUTH ${PASSWORD}`)).toBe('OK');
    expect(await c.request('PING')).toBe('PONG');
    const body = (await store.admin('/metrics')).body;
    expect(metric(body, 'kvstore_auth_failures_total')).toBe(2);
    expect(metric(body, 'kvstore_commands_total{command="AUTH",result="error"}')).toBe(2);
  });

  it('closes the connection after the third wrong password, with its reply sent first', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    expect(await c.request('AUTH a')).toBe('ERROR invalid password');
    expect(await c.request('AUTH b')).toBe('ERROR invalid password');
    // The third failure closes: the line pipelined behind it is not run.
    c.send(`AUTH c\nAUTH ${PASSWORD}\nPING\n`);
    await c.closed;
    expect(c.received.slice(-1)).toEqual(['ERROR invalid password']);
    expect(c.received).toHaveLength(3);
    const body = (await store.admin('/metrics')).body;
    expect(metric(body, 'kvstore_auth_failures_total')).toBe(3);
    // Other connections are not affected.
    const other = await store.client();
    expect(await other.request(`AUTH ${PASSWORD}`)).toBe('OK');
  });

  it('failures count per connection, also after a successful AUTH', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    expect(await c.request('AUTH x')).toBe('ERROR invalid password');
    expect(await c.request(`AUTH ${PASSWORD}`)).toBe('OK');
    expect(await c.request(`AUTH ${PASSWORD}`)).toBe('OK'); // again: still fine
    expect(await c.request('AUTH y')).toBe('ERROR invalid password');
    expect(await c.request('PING')).toBe('PONG'); // a failed AUTH does not undo the good one
    c.send('AUTH z\n');
    await c.closed;
    expect(c.received.at(-1)).toBe('ERROR invalid password');
  });

  it('QUIT before AUTH says BYE and closes; nothing pipelined after it runs', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    c.send(`QUIT\nAUTH ${PASSWORD}\nSET k v\n`);
    await c.closed;
    expect(c.received).toEqual(['BYE']);
    expect(store.service.engine.keyCount).toBe(0);
  });

  it('AUTH pipelined with the commands after it, in one write, runs them all in order', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    c.send(`GET k\nAUTH ${PASSWORD}\nSET k v\nGET k\nSETEX t 10 x\nTTL t\nQUIT\n`);
    await c.closed;
    expect(c.received).toEqual(['ERROR authentication required', 'OK', 'OK', 'VALUE dg==', 'OK', 'TTL 10', 'BYE']);
  });

  it('AUTH split over many reads (byte by byte) is framed as one line', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    for (const ch of `AUTH ${PASSWORD}\n`) {
      c.send(ch);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await c.line()).toBe('OK');
    expect(await c.request('PING')).toBe('PONG');
  });

  it('a password with spaces (leading, inner, trailing) and UTF-8 is the whole rest of the line; CRLF framing works', async () => {
    const password = '  two  spaces and ünïcode ';
    const store = await startTestStore({ password: new Secret(password) });
    const c = await store.client();
    expect(await c.request(`AUTH ${password.trim()}`)).toBe('ERROR invalid password');
    expect(await c.request(`AUTH ${password}\r`)).toBe('OK');
  });

  it('bare AUTH is a wrong number of arguments (not an attempt); `AUTH ` tries the empty password', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    const c = await store.client();
    expect(await c.request('AUTH')).toBe('ERROR wrong number of arguments');
    expect(await c.request('auth ')).toBe('ERROR invalid password');
    expect(await c.request('QUIT now')).toBe('ERROR wrong number of arguments');
    expect(await c.request(`auth ${PASSWORD}`)).toBe('OK'); // the name in any case
    const body = (await store.admin('/metrics')).body;
    expect(metric(body, 'kvstore_auth_failures_total')).toBe(1);
  });

  it('with no password set, AUTH answers `ERROR authentication not enabled` and every command works without it', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('SET k v')).toBe('OK');
    expect(await c.request('AUTH anything')).toBe('ERROR authentication not enabled');
    expect(await c.request('AUTH')).toBe('ERROR wrong number of arguments');
    expect(await c.request('GET k')).toBe('VALUE dg==');
    const body = (await store.admin('/metrics')).body;
    expect(metric(body, 'kvstore_auth_failures_total')).toBe(0);
  });

  it('the readiness probe authenticates against its own store', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD) });
    expect((await store.admin('/readyz')).status).toBe(200);
    const health = await store.admin('/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok' });
  });

  it('the password appears in no log line, no metric and no reply, even at trace level', async () => {
    const store = await startTestStore({ password: new Secret(PASSWORD), logLevel: 'trace' });
    const c = await store.client();
    await c.request('AUTH guess one');
    await c.request(`AUTH ${PASSWORD}`);
    await c.request('SET k v');
    await store.admin('/readyz');
    const metrics = (await store.admin('/metrics')).body;
    const stats = await c.request('STATS');
    c.send('AUTH x\nAUTH y\nAUTH z\n');
    await c.closed;
    expect(store.logs.length).toBeGreaterThan(0);
    const everything = [JSON.stringify(store.logs), metrics, stats, c.received.join('\n')].join('\n');
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain('guess one');
    // The ready line says a password is required, not which.
    expect(store.logs.find((l) => l.msg === STORE_READY)).toMatchObject({ passwordRequired: true });
  });
});

describe('store password: settings', () => {
  const file = tempFiles('kvstore-password-');
  const { dir } = file;

  it('STORE_PASSWORD is taken verbatim, spaces included; empty means none', () => {
    expect(loadStoreConfig({ STORE_PASSWORD: ' a b ' }).password?.reveal()).toBe(' a b ');
    expect(loadStoreConfig({ STORE_PASSWORD: '' }).password).toBeUndefined();
    expect(loadStoreConfig({}).password).toBeUndefined();
  });

  it('STORE_PASSWORD_FILE is read at start-up with one trailing line break dropped (LF or CRLF)', () => {
    expect(loadStoreConfig({ STORE_PASSWORD_FILE: file('lf', 'from a file\n') }).password?.reveal()).toBe('from a file');
    expect(loadStoreConfig({ STORE_PASSWORD_FILE: file('crlf', 'windows\r\n') }).password?.reveal()).toBe('windows');
    expect(loadStoreConfig({ STORE_PASSWORD_FILE: file('none', ' no newline ') }).password?.reveal()).toBe(' no newline ');
  });

  it('refuses both set, an unreadable file, an empty one, more than two lines (a password and the previous one), or a password with a line break, naming the variable and never the password', () => {
    const attempts: [Record<string, string>, RegExp][] = [
      [{ STORE_PASSWORD: 'sekrit-1', STORE_PASSWORD_FILE: file('both', 'sekrit-2') }, /STORE_PASSWORD and STORE_PASSWORD_FILE are both set/],
      [{ STORE_PASSWORD_FILE: join(dir, 'missing') }, /STORE_PASSWORD_FILE=.*missing.* cannot read it \(ENOENT\)/],
      [{ STORE_PASSWORD_FILE: file('empty', '\n') }, /STORE_PASSWORD_FILE=.* it is empty/],
      [{ STORE_PASSWORD_FILE: file('three', 'sekrit-3\nsekrit-4\nsekrit-7\n') }, /STORE_PASSWORD_FILE=.* holds 3 lines/],
      [{ STORE_PASSWORD_FILE: file('empty-previous', 'sekrit-8\n\n') }, /STORE_PASSWORD_FILE=.* previous password .* it is empty/],
      [{ STORE_PASSWORD: 'sekrit-5\nx' }, /STORE_PASSWORD is invalid: .*line break/],
      [{ STORE_PASSWORD: 'sekrit-6\r' }, /STORE_PASSWORD is invalid: .*carriage return/],
    ];
    for (const [env, message] of attempts) {
      let err: unknown;
      try {
        loadStoreConfig(env);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(Object.keys(env))).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toMatch(/sekrit/);
    }
  });

  it('a config holding a password prints it as [redacted]', () => {
    const config = loadStoreConfig({ STORE_PASSWORD: 'sekrit' });
    expect(JSON.stringify(config)).not.toContain('sekrit');
    expect(String(config.password)).toBe('[redacted]');
  });

  it('a store started from a password file asks for that password', async () => {
    const store = await startTestStore({ passwordFile: file('store', 'filed secret\n') });
    const c = await store.client();
    expect(await c.request('PING')).toBe('ERROR authentication required');
    expect(await c.request('AUTH filed secret')).toBe('OK');
  });
});
