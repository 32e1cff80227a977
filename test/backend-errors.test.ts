// How store failures reach HTTP clients (SPEC §2): unreachable 503 (at once), silent
// 504 (after STORE_TIMEOUT_MS, then 503 at once while it stays silent), garbage 502, ERROR out of memory 507, other ERROR 502;
// the backend starts with the store down and recovers when it comes back.
import { describe, expect, it } from 'vitest';
import { backendHarness, send, type RawResponse } from './helpers/backend-harness.ts';
import { freePort } from './helpers/service-process.ts';
import { waitUntil } from './helpers/wait-until.ts';

const h = backendHarness();

/** Error bodies are one short line of plain text: never a stack trace or an internal message. */
function expectShortPlainError(res: RawResponse, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
  if (res.method === 'HEAD') return expect(res.body.length).toBe(0);
  expect(res.body.length).toBeLessThan(120);
  expect(res.text).not.toMatch(/\bat \S+ \(|Error:|ECONN|127\.0\.0\.1/);
  expect(res.text.endsWith('\n')).toBe(true);
  expect(res.text.trim()).not.toContain('\n');
}

function untilConnected(backend: { ring: { stateCounts(): Record<string, number> } }, n: number): Promise<true> {
  // The pool reconnects on its own schedule.
  return waitUntil(`${n} pooled connections`, async () => (backend.ring.stateCounts().connected >= n ? true : undefined), { everyMs: 20 });
}

describe('store unreachable', () => {
  it('answers 503 at once, for every method, without waiting for the command time-out', async () => {
    // With a ten-minute time-out, only a fast failure can finish within the test time-out.
    const backend = await h.backend(await freePort(), { storeTimeoutMs: 600_000 });
    expectShortPlainError(await send(backend.port, 'GET', '/k'), 503);
    expectShortPlainError(await send(backend.port, 'HEAD', '/k'), 503);
    expectShortPlainError(await send(backend.port, 'PUT', '/k', 'v'), 503);
    expectShortPlainError(await send(backend.port, 'POST', '/k', 'v'), 503);
    expectShortPlainError(await send(backend.port, 'DELETE', '/k'), 503);
  });

  it('answers 503 when the store hangs up in the middle of a command', async () => {
    const fake = await h.fake(() => ({ close: true }));
    const backend = await h.backend(fake.port, { storePoolSize: 1 });
    expectShortPlainError(await send(backend.port, 'GET', '/k'), 503);
  });

  it('starts while the store is down, is live but not ready, and serves once the store is up', async () => {
    const port = await freePort();
    const backend = await h.backend(port, { storePoolSize: 2 });
    expect((await fetch(`http://127.0.0.1:${backend.metricsPort}/livez`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${backend.metricsPort}/readyz`)).status).toBe(503);
    const health = await fetch(`http://127.0.0.1:${backend.metricsPort}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: 'error' });
    expectShortPlainError(await send(backend.port, 'GET', '/k'), 503);

    await h.store({ port });
    expect((await fetch(`http://127.0.0.1:${backend.metricsPort}/readyz`)).status).toBe(200);
    await untilConnected(backend, 2);
    expect((await send(backend.port, 'PUT', '/k', 'v')).status).toBe(204);
    expect((await send(backend.port, 'GET', '/k')).text).toBe('v');
  });

  it('recovers after the store restarts on the same port, without a backend restart', async () => {
    const port = await freePort();
    const first = await h.store({ port });
    const backend = await h.backend(port, { storePoolSize: 2 });
    expect((await send(backend.port, 'PUT', '/k', 'before')).status).toBe(204);

    await first.close();
    expectShortPlainError(await send(backend.port, 'GET', '/k'), 503);

    await h.store({ port });
    await untilConnected(backend, 2);
    // A new store process: the old value is gone, and the backend works again.
    expect((await send(backend.port, 'GET', '/k')).status).toBe(404);
    expect((await send(backend.port, 'PUT', '/k', 'after')).status).toBe(204);
    expect((await send(backend.port, 'GET', '/k')).text).toBe('after');
  });
});

describe('store misbehaving', () => {
  it('answers 504 when the store accepts connections and never answers, then 503 at once while it stays silent', async () => {
    const fake = await h.fake(() => ({ silent: true }));
    // One backend per method: after its first time-out a backend fails fast (503) until the store answers a PING.
    for (const [method, body] of [['GET'], ['PUT', 'v'], ['DELETE']] as const) {
      const backend = await h.backend(fake.port, { storeTimeoutMs: 100, storePoolSize: 1 });
      expectShortPlainError(await send(backend.port, method, '/k', body), 504);
      expectShortPlainError(await send(backend.port, method, '/k', body), 503);
    }
  });

  it('answers 502 when the store answers garbage', async () => {
    const fake = await h.fake(() => 'HELLO THERE');
    const backend = await h.backend(fake.port, { storePoolSize: 1 });
    expectShortPlainError(await send(backend.port, 'GET', '/k'), 502);
    expectShortPlainError(await send(backend.port, 'PUT', '/k', 'v'), 502);
    expectShortPlainError(await send(backend.port, 'DELETE', '/k'), 502);
  });

  it('checks the SET reply: anything but OK is 502, ERROR out of memory is 507', async () => {
    const fake = await h.fake((line) => {
      if (line.startsWith('SET full ')) return 'ERROR out of memory';
      if (line.startsWith('SETEX full ')) return 'ERROR out of memory';
      if (line.startsWith('SET odd ')) return 'ERROR something unexpected';
      if (line.startsWith('SET big ')) return 'ERROR value too large';
      if (line.startsWith('SET yes ')) return 'YES';
      return 'OK';
    });
    const backend = await h.backend(fake.port, { storePoolSize: 1 });
    expectShortPlainError(await send(backend.port, 'PUT', '/full', 'v'), 507);
    expectShortPlainError(await send(backend.port, 'POST', '/full?ttl=5', 'v'), 507);
    expectShortPlainError(await send(backend.port, 'PUT', '/odd', 'v'), 502);
    expectShortPlainError(await send(backend.port, 'PUT', '/big', 'v'), 502);
    expectShortPlainError(await send(backend.port, 'PUT', '/yes', 'v'), 502);
    expect((await send(backend.port, 'PUT', '/fine', 'v')).status).toBe(204);
  });

  it('maps ERROR replies to GET and DELETE the same way (out of memory 507, others 502)', async () => {
    const fake = await h.fake((line) => (line.endsWith(' full') ? 'ERROR out of memory' : 'ERROR busy'));
    const backend = await h.backend(fake.port, { storePoolSize: 1 });
    expectShortPlainError(await send(backend.port, 'GET', '/full'), 507);
    expectShortPlainError(await send(backend.port, 'DELETE', '/full'), 507);
    expectShortPlainError(await send(backend.port, 'GET', '/k'), 502);
    expectShortPlainError(await send(backend.port, 'DELETE', '/k'), 502);
  });

  it('answers 507 from a real store that is full under EVICTION_POLICY=noeviction', async () => {
    const store = await h.store({ maxMemoryBytes: 64, evictionPolicy: 'noeviction' });
    const backend = await h.backend(store.port);
    expect((await send(backend.port, 'PUT', '/small', 'x')).status).toBe(204);
    expectShortPlainError(await send(backend.port, 'PUT', '/large', 'y'.repeat(100)), 507);
    expect((await send(backend.port, 'GET', '/large')).status).toBe(404);
  });
});

describe('a store client that throws synchronously', () => {
  it('answers 500 to the write and keeps serving (the throw happens after the body is read)', async () => {
    const { createBackendApp } = await import('../services/backend/backend-app.ts');
    const { createLogger } = await import('../services/shared/logger.ts');
    const { default: request } = await import('supertest');
    const store = {
      get: async () => Buffer.from('still here'),
      del: async () => {},
      set: (): Promise<void> => {
        throw new RangeError('refused by the client library');
      },
    };
    const app = createBackendApp({ store, logger: createLogger({ name: 't', level: 'silent' }), maxValueBytes: 1024 });
    const put = await request(app).put('/k').send('v');
    expect(put.status).toBe(500);
    expect(put.text).toBe('internal error\n');
    expect((await request(app).get('/k')).text).toBe('still here');
  });
});
