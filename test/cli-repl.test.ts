import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/index.ts';
import { loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { startFakeStore } from './helpers/fake-store.ts';
import { freePort } from '../services/shared/free-port.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startStore(port = 0): Promise<StoreService> {
  const config = loadStoreConfig({}, { port, metricsPort: 0, logLevel: 'silent' });
  const store = await startStoreService(config, { logger: createLogger({ name: 'kvstore', level: 'silent' }) });
  cleanups.push(() => store.destroy());
  return store;
}

function connect(port: number): StoreConnection {
  const conn = new StoreConnection({ host: '127.0.0.1', port });
  cleanups.push(() => conn.destroy());
  return conn;
}

/** `kv` with no command and stdin piped: the scripted interactive client. */
interface Session {
  readonly child: ChildProcessWithoutNullStreams;
  /** stdout so far, split into lines (a partial last line is held back). */
  readonly lines: string[];
  readonly stdout: () => Buffer;
  readonly stderr: () => string;
  /** Resolves when stdout has at least n complete lines. */
  waitForLines(n: number): Promise<string[]>;
  /** Ends stdin and resolves with the exit code. */
  finish(): Promise<number | null>;
}

function startSession(port: number, args: string[] = []): Session {
  const child = spawn(process.execPath, ['bin/kv.js', ...args], {
    cwd: root,
    env: { ...process.env, KV_STORE: `127.0.0.1:${port}`, KV_HISTORY_FILE: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let err = '';
  const lines: string[] = [];
  let waiters: { n: number; resolve: (l: string[]) => void }[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  child.stdout.on('data', (c: Buffer) => {
    out.push(c);
    const text = Buffer.concat(out).toString('utf8');
    lines.splice(0, lines.length, ...text.split('\n').slice(0, -1));
    waiters = waiters.filter((w) => (lines.length >= w.n ? (w.resolve([...lines]), false) : true));
  });
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  cleanups.push(() => {
    if (child.exitCode === null) child.kill();
    return exited;
  });
  return {
    child,
    lines,
    stdout: () => Buffer.concat(out),
    stderr: () => err,
    waitForLines: (n) =>
      new Promise((resolve, reject) => {
        if (lines.length >= n) return resolve([...lines]);
        waiters.push({ n, resolve });
        void exited.then(() => reject(new Error(`kv exited after ${lines.length} lines (wanted ${n}); stderr: ${err}`)));
      }),
    finish: () => {
      child.stdin.end();
      return exited;
    },
  };
}

async function runScript(port: number, script: string, args: string[] = []) {
  const session = startSession(port, args);
  session.child.stdin.write(script);
  const code = await session.finish();
  return { code, lines: session.lines, stdout: session.stdout(), stderr: session.stderr() };
}

describe('kv interactive client with piped stdin', () => {
  it('sends each line as typed and prints exactly one line per command, no prompt or banner', async () => {
    const store = await startStore();
    const script = [
      'SET a hello  world ',
      'GET a',
      'get missing',
      'SET',
      'PING',
      '',
      'TTL a',
      'DELETE a',
      'GET a',
      'BOGUS',
      'SET e ',
      'GET e',
      'USAGE',
      'STATS',
    ].join('\n') + '\n';
    const r = await runScript(store.port, script);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.lines.slice(0, 12)).toEqual([
      'OK',
      'hello  world ',
      '(nil)',
      '(error) wrong number of arguments',
      'PONG',
      'TTL -1',
      'OK',
      '(nil)',
      '(error) unknown command',
      'OK',
      '',
      'USAGE 1',
    ]);
    expect(r.lines[12]).toMatch(/^STATS (.* )?keys=1( |$)/);
    expect(r.lines).toHaveLength(13);
  });

  it('prints a binary value raw, so the line holds exactly its bytes', async () => {
    const store = await startStore();
    const value = Buffer.from([0xff, 0x00, 0x41, 0x0d, 0x20]);
    await connect(store.port).set('bin', value);
    const r = await runScript(store.port, 'GET bin\n');
    expect(r.stdout.equals(Buffer.concat([value, Buffer.from('\n')]))).toBe(true);
  });

  it('--json prints one JSON object per reply', async () => {
    const store = await startStore();
    const r = await runScript(store.port, 'SET k v\nGET k\nGET nope\nTTL k\nSET bad key\n', ['--json']);
    expect(r.code).toBe(0);
    expect(r.lines.map((l) => JSON.parse(l))).toEqual([
      { ok: true },
      { ok: true, value: 'v', encoding: 'utf8' },
      { ok: false, notFound: true },
      { ok: true, ttl: -1 },
      { ok: true },
    ]);
  });

  it('QUIT ends the session: later lines are not run', async () => {
    const store = await startStore();
    const r = await runScript(store.port, 'SET q 1\nquit\nSET q 2\n');
    expect(r).toMatchObject({ code: 0, lines: ['OK'] });
    expect((await connect(store.port).get('q'))?.toString()).toBe('1');
  });

  it('reconnects when the store restarts on the same port, and says so on stderr', async () => {
    const first = await startStore();
    const port = first.port;
    await connect(port).set('before', 'x');
    const session = startSession(port);
    session.child.stdin.write('GET before\n');
    expect(await session.waitForLines(1)).toEqual(['x']);

    await first.close();
    const second = await startStore(port);
    // The session still holds its old, now dead connection: the next command must reconnect.
    session.child.stdin.write('SET after y\nGET after\nGET before\n');
    expect(await session.waitForLines(4)).toEqual(['x', 'OK', 'y', '(nil)']);
    expect(await session.finish()).toBe(0);
    expect(session.stderr()).toMatch(/lost; reconnected/);
    expect((await connect(second.port).get('after'))?.toString()).toBe('y');
  });

  it('transport failures are printed as (error) lines and make the exit status 2', async () => {
    const port = await freePort();
    const r = await runScript(port, 'PING\nPING\n');
    expect(r.code).toBe(2);
    expect(r.lines).toHaveLength(2);
    for (const line of r.lines) expect(line).toMatch(/^\(error\) .*ECONNREFUSED/);
  });

  it('a time-out is reported and the next command runs on a new connection', async () => {
    const fake = await startFakeStore((line) => (line === 'PING' ? 'PONG' : { silent: true }));
    cleanups.push(() => fake.close());
    const r = await runScript(fake.port, 'GET slow\nPING\n', ['--timeout', '200']);
    expect(r.code).toBe(2);
    expect(r.lines).toEqual(['(error) store 127.0.0.1:' + fake.port + ' did not answer within 200 ms', 'PONG']);
  });

  it('help prints the protocol summary', async () => {
    const store = await startStore();
    const r = await runScript(store.port, 'help\n');
    expect(r.code).toBe(0);
    expect(r.stdout.toString()).toMatch(/SETEX <key> <seconds> <value>/);
  });
});
