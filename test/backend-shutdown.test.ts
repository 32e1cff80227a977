// Graceful shutdown (SIGTERM): stop accepting, let in-flight requests finish, answer
// requests that still arrive on kept-alive connections with 503 + Connection: close,
// then close the pool, the monitor and the admin port; main.ts exits 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { backendHarness, send } from './helpers/backend-harness.ts';
import { backendScript, freePort, startServiceProcess } from './helpers/service-process.ts';
import { b64 } from './helpers/base64.ts';
import { BACKEND_READY } from '../services/shared/ready-line.ts';
import { compileCacheEntries } from './helpers/compile-cache.ts';

const h = backendHarness();

interface ParsedResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** A raw keep-alive HTTP/1.1 connection: we choose exactly when each byte is sent. */
async function rawConnection(port: number): Promise<{ socket: Socket; write(text: string): void; next(): Promise<ParsedResponse>; closed: Promise<void> }> {
  const socket = connect({ host: '127.0.0.1', port });
  h.defer(() => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let buffered = '';
  const responses: ParsedResponse[] = [];
  const waiters: ((r: ParsedResponse) => void)[] = [];
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const [statusLine, ...lines] = buffered.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
      const length = Number(headers['content-length'] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const response = { status: Number(statusLine!.split(' ')[1]), headers, body: buffered.slice(end + 4, end + 4 + length) };
      buffered = buffered.slice(end + 4 + length);
      const w = waiters.shift();
      if (w) w(response);
      else responses.push(response);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    write: (text) => socket.write(text),
    next: () => {
      const r = responses.shift();
      return r ? Promise.resolve(r) : new Promise((resolve) => waiters.push(resolve));
    },
    closed,
  };
}

describe('backend graceful shutdown', () => {
  it('finishes in-flight requests and answers new requests on kept-alive connections with 503 + Connection: close', async () => {
    // A store that holds `GET slow` until the test releases it.
    let slowArrived!: () => void;
    const slowReceived = new Promise<void>((resolve) => (slowArrived = resolve));
    const fake = await h.fake((line) => {
      if (line !== 'GET slow') return 'VALUE ' + b64('fast');
      slowArrived();
      return { silent: true };
    });
    const backend = await h.backend(fake.port, { storePoolSize: 1, storeTimeoutMs: 30_000 });

    // A kept-alive connection that has started its next request when shutdown begins.
    const keptAlive = await rawConnection(backend.port);
    keptAlive.write('GET /other HTTP/1.1\r\nHost: test\r\n\r\n');
    expect((await keptAlive.next()).status).toBe(200);
    keptAlive.write('GET /other HTTP/1.1\r\nHo');

    // A request in flight: the store has it and has not answered (one pool connection,
    // so the release below answers exactly this command).
    const inFlight = await rawConnection(backend.port);
    inFlight.write('GET /slow HTTP/1.1\r\nHost: test\r\n\r\n');
    await slowReceived;

    const closing = backend.close();

    keptAlive.write('st: test\r\n\r\n');
    const refused = await keptAlive.next();
    expect(refused.status).toBe(503);
    expect(refused.headers.connection).toBe('close');
    expect(refused.body).toBe('shutting down\n');
    await keptAlive.closed;

    // Nothing new is accepted.
    await expect(send(backend.port, 'GET', '/k')).rejects.toThrow(/ECONNREFUSED/);

    // The in-flight request still gets its answer, and its connection then closes.
    for (const s of fake.sockets) s.write('VALUE ' + b64('slow value') + '\n');
    const answered = await inFlight.next();
    expect(answered.status).toBe(200);
    expect(answered.body).toBe('slow value');
    expect(answered.headers.connection).toBe('close');
    await inFlight.closed;

    await closing;
    expect(backend.ring.stateCounts().closed).toBe(1);
    await expect(fetch(`http://127.0.0.1:${backend.metricsPort}/livez`)).rejects.toThrow();
    // The monitor is stopped: it reports nothing more.
    expect(await backend.monitor.nextResult()).toBeUndefined();
  });

  it('lets a PUT whose body is still arriving finish and store its value', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port);
    const conn = await rawConnection(backend.port);
    // Expect: 100-continue makes the backend say when it has the request, before the body.
    conn.write('PUT /late HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n');
    expect((await conn.next()).status).toBe(100);
    conn.write('hello');

    const closing = backend.close();
    conn.write('world');
    const res = await conn.next();
    expect(res.status).toBe(204);
    await closing;
    expect((await h.conn(store.port).get('late'))?.toString()).toBe('helloworld');
  });

  it('with a drain delay: readiness fails at once while requests are still served and accepted, each response closing its connection', async () => {
    const store = await h.store();
    // Longer than the test: everything below happens inside the delay.
    const backend = await h.backend(store.port, { shutdownDelayMs: 600_000 });
    const admin = (path: string) => fetch(`http://127.0.0.1:${backend.metricsPort}${path}`);
    expect((await admin('/readyz')).status).toBe(200);
    const keptAlive = await rawConnection(backend.port);
    keptAlive.write('PUT /during HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\nv1');
    expect((await keptAlive.next()).status).toBe(204);

    void backend.close();
    expect((await admin('/readyz')).status).toBe(503);
    expect(await (await admin('/healthz')).json()).toMatchObject({ status: 'error', error: 'shutting down' });
    expect((await admin('/livez')).status).toBe(200);

    // The kept-alive connection is served, and told to close.
    keptAlive.write('GET /during HTTP/1.1\r\nHost: test\r\n\r\n');
    const served = await keptAlive.next();
    expect(served.status).toBe(200);
    expect(served.body).toBe('v1');
    expect(served.headers.connection).toBe('close');
    await keptAlive.closed;
    // A new connection is still accepted and served (a load balancer may not have noticed yet).
    const fresh = await send(backend.port, 'PUT', '/fresh', 'v2');
    expect(fresh.status).toBe(204);
    expect(fresh.headers.connection).toBe('close');
    expect((await h.conn(store.port).get('fresh'))?.toString()).toBe('v2');
  });

  it('main.ts exits 0 on SIGTERM and on SIGINT, also with the store down', async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const service = await startServiceProcess(
        backendScript,
        { HOST: '127.0.0.1', PORT: '0', BACKEND_METRICS_PORT: '0', KV_STORE: `127.0.0.1:${await freePort()}` },
        BACKEND_READY,
      );
      h.defer(() => service.stop('SIGKILL'));
      expect(await service.stop(signal)).toBe(0);
      expect(service.logs.map((l) => l.msg)).toContain('kvbackend stopped');
    }
  });

  it("main.ts turns on Node's compile cache before the backend's modules load and writes it once the backend has started", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvbackend-compile-cache-'));
    h.defer(() => rmSync(dir, { recursive: true, force: true }));
    // No NODE_COMPILE_CACHE, which would have Node turn the cache on by itself: main.ts does.
    const env = { HOST: '127.0.0.1', PORT: '0', BACKEND_METRICS_PORT: '0', KV_STORE: `127.0.0.1:${await freePort()}`, TMPDIR: dir, NODE_COMPILE_CACHE: '' };
    const service = await startServiceProcess(backendScript, env, BACKEND_READY);
    h.defer(() => service.stop('SIGKILL'));
    const entries = (): number => compileCacheEntries(dir);
    // An entry per module compiled, Express's among them, written while the backend serves,
    // not only as it leaves: a backend that is killed keeps them.
    await vi.waitFor(() => expect(entries()).toBeGreaterThan(50), { timeout: 10_000, interval: 20 });
    const written = entries();
    await service.stop('SIGKILL');
    expect(entries()).toBe(written);
  });

  it('main.ts refuses a bad setting with a message naming the variable, exit 1', async () => {
    const started = startServiceProcess(backendScript, { PORT: 'eighty' }, BACKEND_READY);
    await expect(started).rejects.toThrow(/exited with 1[\s\S]*PORT="eighty"/);
  });
});
