// Slow and stalled request bodies: BODY_TIMEOUT_MS bounds how long one may take (408),
// BODY_BUFFER_BYTES bounds the body bytes held across all connections (503 at once past
// it). Each refusal is counted by reason, nothing is stored, and the budget comes back.
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { backendHarness, metricSum, scrape, send } from './helpers/backend-harness.ts';
import { waitUntil } from './helpers/wait-until.ts';

const h = backendHarness();

interface Upload {
  readonly socket: Socket;
  /** The first response: status, headers and body as text. */
  readonly response: Promise<{ status: number; head: string; body: string }>;
  /** Resolves when the connection has closed. */
  readonly closed: Promise<void>;
}

/** Sends a PUT's headers and the first part of its body, then nothing more until the test says. */
function upload(port: number, path: string, head: string, firstPart: string | Buffer): Upload {
  const socket = connect({ host: '127.0.0.1', port });
  h.defer(() => socket.destroy());
  socket.on('error', () => {});
  socket.once('connect', () => {
    socket.write(`PUT ${path} HTTP/1.1\r\nHost: t\r\n${head}\r\n`);
    socket.write(firstPart);
  });
  let text = '';
  socket.setEncoding('latin1');
  const response = new Promise<{ status: number; head: string; body: string }>((resolve, reject) => {
    socket.on('data', (c: string) => {
      text += c;
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const headText = text.slice(0, end);
      const length = Number(/content-length: *(\d+)/i.exec(headText)?.[1] ?? 0);
      if (text.length >= end + 4 + length) resolve({ status: Number(headText.split(' ')[1]), head: headText, body: text.slice(end + 4, end + 4 + length) });
    });
    socket.once('close', () => reject(new Error(`closed without a response: ${JSON.stringify(text)}`)));
  });
  response.catch(() => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, response, closed };
}

const refusals = async (metricsPort: number, reason: string) =>
  metricSum(await scrape(metricsPort), 'kvbackend_http_body_refusals_total', `reason="${reason}"`);
const buffered = async (metricsPort: number) => metricSum(await scrape(metricsPort), 'kvbackend_http_body_buffered_bytes');

describe('BODY_TIMEOUT_MS', () => {
  it('a body that stalls gets 408 and its connection closed; nothing is stored, and its budget is given back', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port, { bodyTimeoutMs: 200 });
    const stalled = upload(backend.port, '/slow', 'Content-Length: 1000\r\n', 'x'.repeat(400));
    const res = await stalled.response;
    expect(res.status).toBe(408);
    expect(res.head).toMatch(/\r\nconnection: close/i);
    expect(res.body).toBe('request body not received in time\n');
    await stalled.closed;
    expect(await refusals(backend.metricsPort, 'timeout')).toBe(1);
    expect(await buffered(backend.metricsPort)).toBe(0);
    expect(await h.conn(store.port).get('slow')).toBeNull();
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_http_requests_total', 'status="408"')).toBe(1);
    // A body that arrives in time is stored as before.
    expect((await send(backend.port, 'PUT', '/fast', 'v')).status).toBe(204);
  });
});

describe('BODY_BUFFER_BYTES', () => {
  it('past the budget a body is refused with 503 at once; the stalled ones finish and the budget comes back', async () => {
    const store = await h.store();
    const KiB = 1024;
    const backend = await h.backend(store.port, { maxValueBytes: 32 * KiB, bodyBufferBytes: 64 * KiB, bodyTimeoutMs: 600_000 });
    // Two uploads declare 30 KiB each, send 20 KiB and stall: 60 KiB of the 64 are taken.
    const a = upload(backend.port, '/a', `Content-Length: ${30 * KiB}\r\n`, 'a'.repeat(20 * KiB));
    const b = upload(backend.port, '/b', `Content-Length: ${30 * KiB}\r\n`, 'b'.repeat(20 * KiB));
    await waitUntil('both bodies held', async () => ((await buffered(backend.metricsPort)) === 60 * KiB ? true : undefined), { everyMs: 10 });
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_http_body_buffer_limit_bytes')).toBe(64 * KiB);

    // A third, declared: refused before its body is read.
    const c = upload(backend.port, '/c', `Content-Length: ${10 * KiB}\r\n`, 'c'.repeat(KiB));
    const refused = await c.response;
    expect(refused.status).toBe(503);
    expect(refused.head).toMatch(/\r\nconnection: close/i);
    await c.closed;
    // A chunked one: refused as soon as its bytes pass the budget.
    const chunk = 'd'.repeat(5 * KiB);
    const d = upload(backend.port, '/d', 'Transfer-Encoding: chunked\r\n', `${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    expect((await d.response).status).toBe(503);
    expect(await refusals(backend.metricsPort, 'buffer_full')).toBe(2);
    // Small bodies that fit in what is left are still accepted.
    expect((await send(backend.port, 'PUT', '/small', 'v')).status).toBe(204);

    // The stalled uploads complete: stored, and the budget is free again.
    a.socket.write('a'.repeat(10 * KiB));
    b.socket.write('b'.repeat(10 * KiB));
    expect((await a.response).status).toBe(204);
    expect((await b.response).status).toBe(204);
    expect(await buffered(backend.metricsPort)).toBe(0);
    expect((await h.conn(store.port).get('a'))?.length).toBe(30 * KiB);
    expect(await h.conn(store.port).get('c')).toBeNull();
    expect(await h.conn(store.port).get('d')).toBeNull();
    expect((await send(backend.port, 'PUT', '/c', 'c'.repeat(30 * KiB))).status).toBe(204);
  });

  it('with Expect: 100-continue a body that does not fit is refused without being invited', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port, { maxValueBytes: 1024, bodyBufferBytes: 1024, bodyTimeoutMs: 600_000 });
    const held = upload(backend.port, '/held', 'Content-Length: 1000\r\n', 'h');
    await waitUntil('the body held', async () => ((await buffered(backend.metricsPort)) === 1000 ? true : undefined), { everyMs: 10 });
    const asking = upload(backend.port, '/asking', 'Content-Length: 100\r\nExpect: 100-continue\r\n', '');
    const res = await asking.response;
    expect(res.status).toBe(503);
    held.socket.destroy();
    await waitUntil('the budget given back', async () => ((await buffered(backend.metricsPort)) === 0 ? true : undefined), { everyMs: 10 });
  });
});
