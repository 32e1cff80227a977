// Access logs and request ids: one JSON line per request with the request id, method,
// status and duration, and never the key or the value. The app is driven by supertest
// without a port, over a store stub, with the logger writing into a sink.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createBackendApp, type BackendStore } from '../services/backend/backend-app.ts';
import { StoreTimeoutError, StoreUnavailableError } from '../services/client/errors.ts';
import type { LogLevel } from '../services/shared/logger.ts';
import { loggerWithSink } from './helpers/backend-harness.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An in-memory stand-in for the pool; keys starting with `down` and `slow` fail like a dead or silent store. */
function memoryStore(): BackendStore {
  const data = new Map<string, Buffer>();
  return {
    async get(key) {
      if (key.startsWith('down')) throw new StoreUnavailableError('store 127.0.0.1:1 is unavailable');
      if (key.startsWith('slow')) throw new StoreTimeoutError('store 127.0.0.1:1 did not answer within 1000 ms');
      return data.get(key) ?? null;
    },
    async set(key, value) {
      data.set(key, Buffer.from(value));
    },
    async del(key) {
      data.delete(key);
    },
  };
}

function appWithSink(level: LogLevel = 'info') {
  const { logger, sink } = loggerWithSink(level);
  const app = createBackendApp({ store: memoryStore(), logger, maxValueBytes: 1024 });
  return { app, sink };
}

const accessLines = (lines: Record<string, unknown>[]) => lines.filter((l) => l.msg === 'request completed' || l.msg === 'request failed');

describe('request ids', () => {
  it('keeps a safe incoming X-Request-Id, echoes it, and logs it', async () => {
    const { app, sink } = appWithSink();
    const res = await request(app).put('/k').set('X-Request-Id', 'edge-7f3a:42').send('v');
    expect(res.status).toBe(204);
    expect(res.headers['x-request-id']).toBe('edge-7f3a:42');
    const [line] = accessLines(sink.lines);
    expect(line).toMatchObject({ req: { id: 'edge-7f3a:42', method: 'PUT' }, res: { statusCode: 204 } });
  });

  it('generates an id when there is none, echoes it, and logs the same one', async () => {
    const { app, sink } = appWithSink();
    const a = await request(app).get('/k');
    const b = await request(app).get('/k');
    expect(a.headers['x-request-id']).toMatch(UUID);
    expect(b.headers['x-request-id']).toMatch(UUID);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    expect(accessLines(sink.lines).map((l) => (l.req as { id: string }).id)).toEqual([a.headers['x-request-id'], b.headers['x-request-id']]);
  });

  it('replaces an unsafe or overlong incoming id instead of echoing it', async () => {
    const { app, sink } = appWithSink();
    for (const bad of ['has space', 'x'.repeat(129), '<script>', 'a"b', 'semi;colon', '']) {
      const res = await request(app).get('/k').set('X-Request-Id', bad);
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
    for (const line of sink.raw) expect(line).not.toMatch(/has space|xxxxxxxxxx|<script>|semi;colon/);
  });

  it('echoes the id with logging switched off', async () => {
    const { app, sink } = appWithSink('silent');
    const res = await request(app).get('/k').set('X-Request-Id', 'quiet-1');
    expect(res.headers['x-request-id']).toBe('quiet-1');
    expect(sink.lines).toEqual([]);
  });
});

describe('access log lines', () => {
  it('carry request id, method, status and duration, one per request', async () => {
    const { app, sink } = appWithSink();
    await request(app).put('/k').send('v');
    await request(app).get('/k');
    await request(app).get('/absent');
    await request(app).delete('/k');
    await request(app).patch('/k');
    await request(app).get('/');
    const lines = accessLines(sink.lines);
    expect(lines.map((l) => [(l.req as { method: string }).method, (l.res as { statusCode: number }).statusCode])).toEqual([
      ['PUT', 204],
      ['GET', 200],
      ['GET', 404],
      ['DELETE', 204],
      ['PATCH', 405],
      ['GET', 400],
    ]);
    for (const l of lines) {
      expect(l.level).toBe(30);
      expect(typeof l.responseTime).toBe('number');
      expect((l.req as { id: string }).id).toMatch(UUID);
    }
  });

  it('log store failures at warn with the error type, without a stack', async () => {
    const { app, sink } = appWithSink();
    expect((await request(app).get('/down-key')).status).toBe(503);
    expect((await request(app).get('/slow-key')).status).toBe(504);
    const lines = accessLines(sink.lines);
    expect(lines.map((l) => [l.level, l.msg, (l.err as { type: string }).type])).toEqual([
      [40, 'request failed', 'StoreUnavailableError'],
      [40, 'request failed', 'StoreTimeoutError'],
    ]);
    for (const l of lines) expect(JSON.stringify(l)).not.toContain('stack');
  });

  it('never contain the key, the URL or the value, however the key is spelt', async () => {
    const { app, sink } = appWithSink();
    const key = 'secret-key-3141';
    const value = 'secret-value-2718';
    await request(app).put(`/${key}?ttl=60`).send(value);
    await request(app).get(`/${key}`);
    await request(app).get(`/${key}/more/segments?x=1`);
    await request(app).head(`/${key}`);
    await request(app).delete(`/${key}`);
    await request(app).get(`/%73ecret-key-3141`); // percent-encoded spelling of the same key
    await request(app).put(`/${key}`).send(`${value}\r\nSET owned 1`); // 400
    await request(app).patch(`/${key}`); // 405
    await request(app).get(`/down-${key}`); // 503 with an error message
    await request(app).put(`/${key}`).send('x'.repeat(2000)); // 413
    expect(accessLines(sink.lines)).toHaveLength(10);
    for (const line of sink.raw) {
      expect(line).not.toMatch(/secret|%73ecret|segments|ttl|owned/);
      expect(line).not.toMatch(/"url"|"path"/);
    }
  });
});
