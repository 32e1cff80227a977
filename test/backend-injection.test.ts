// Adversarial suite: an HTTP client must not be able to make the backend send the store
// anything but the one command its request maps to. Every attempt is checked through
// the store's own TCP port and its metrics: the victim key is still there, no `owned`
// key exists, and the store counted no command the attempts could have smuggled in.
import { beforeEach, describe, expect, it } from 'vitest';
import type { BackendService } from '../services/backend/backend-service.ts';
import type { StoreConnection } from '../services/client/index.ts';
import { backendHarness, metricSum, scrape, send, type StoreService } from './helpers/backend-harness.ts';

const h = backendHarness();

let store: StoreService;
let backend: BackendService;
let conn: StoreConnection;

beforeEach(async () => {
  store = await h.store();
  backend = await h.backend(store.port);
  conn = h.conn(store.port);
  await conn.set('victim', 'still here');
});

/** Commands the store has run, from its own metrics (but the backend's periodic USAGE probe). */
async function storeCommands(): Promise<number> {
  const text = await scrape(store.metricsPort);
  return metricSum(text, 'kvstore_commands_total') - metricSum(text, 'kvstore_commands_total', 'command="USAGE"');
}

async function expectStoreUntouched(before: number): Promise<void> {
  // Read the counter before our own checks below add their commands.
  expect(await storeCommands()).toBe(before);
  expect((await conn.get('victim'))?.toString()).toBe('still here');
  expect(await conn.get('owned')).toBeNull();
  expect(await conn.stats()).toMatchObject({ keys: '1' });
}

const smuggledKeys = [
  '/victim%0D%0ADELETE%20victim',
  '/victim%0ADELETE%20victim',
  '/x%0D%0ASET%20owned%201',
  '/x%0ASET%20owned%201',
  '/x%0DSET%20owned%201',
  '/x%20owned%201',
  '/victim%20extra',
  '/%0ADELETE%20victim',
  '/x%09owned',
  '/x%00SET%20owned%201',
  '/x%0B%0CSET',
];

describe('keys carrying a second command', () => {
  it.each(smuggledKeys)('%s is refused on every method and reaches nothing', async (path) => {
    const before = await storeCommands();
    for (const method of ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']) {
      const res = await send(backend.port, method, path, method === 'PUT' || method === 'POST' ? '1' : undefined);
      expect(res.status).toBe(400);
    }
    await expectStoreUntouched(before);
  });

  it('a raw space or line break in the request line never reaches the app', async () => {
    const before = await storeCommands();
    // Node's HTTP parser rejects these itself; the point is that nothing reaches the store.
    for (const path of ['/victim DELETE victim', '/x\r\nSET owned 1']) {
      await send(backend.port, 'GET', path).then(
        (res) => expect(res.status).toBe(400),
        (err: Error) => expect(err.message).toMatch(/Request path contains unescaped characters|ECONNRESET|socket hang up|Invalid/i),
      );
    }
    await expectStoreUntouched(before);
  });
});

describe('bodies carrying a second command', () => {
  const bodies = [
    'x\r\nSET owned 1',
    'x\nSET owned 1',
    'x\rSET owned 1',
    'x\r\nDELETE victim',
    'x\nDELETE victim\n',
    '\nDELETE victim',
    'x\r',
    '\r\n',
    'x\r\nSET owned 1\r\nDELETE victim\r\n',
    Buffer.concat([Buffer.from('x'), Buffer.from([0x0a]), Buffer.from('SET owned 1')]),
  ];

  it.each(bodies.map((b) => [JSON.stringify(b.toString()), b] as const))('%s is refused with 400 and reaches nothing', async (_label, body) => {
    const before = await storeCommands();
    for (const method of ['PUT', 'POST']) {
      expect((await send(backend.port, method, '/target', body)).status).toBe(400);
      expect((await send(backend.port, method, '/target?ttl=60', body)).status).toBe(400);
    }
    await expectStoreUntouched(before);
    expect(await conn.get('target')).toBeNull();
  });

  it('a chunked body with a line break in a later chunk is refused too', async () => {
    const before = await storeCommands();
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: backend.port, method: 'PUT', path: '/target', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.write('harmless first chunk ');
      req.write('then\r\nSET owned 1');
      req.end();
    });
    expect(status).toBe(400);
    await expectStoreUntouched(before);
  });

  it('values with spaces, tabs and protocol words are stored as one value, not run', async () => {
    const before = await storeCommands();
    const value = 'SET owned 1 DELETE victim\tQUIT  ';
    expect((await send(backend.port, 'PUT', '/target', value)).status).toBe(204);
    // Exactly one command (the SET) reached the store.
    expect(await storeCommands()).toBe(before + 1);
    expect((await conn.get('target'))?.toString()).toBe(value);
    expect((await conn.get('victim'))?.toString()).toBe('still here');
    expect(await conn.get('owned')).toBeNull();
  });
});

describe('the ttl parameter carrying a second command', () => {
  it.each(['5%0D%0ASET%20owned%201', '5%0ASET', '5%20owned', '5%00', '5;SET'])('?ttl=%s is refused with 400', async (ttl) => {
    const before = await storeCommands();
    expect((await send(backend.port, 'PUT', `/target?ttl=${ttl}`, 'v')).status).toBe(400);
    await expectStoreUntouched(before);
  });
});

describe('request smuggling at the HTTP layer', () => {
  it('a request with both Content-Length and Transfer-Encoding is refused before the app', async () => {
    const before = await storeCommands();
    const { connect } = await import('node:net');
    const socket = connect({ host: '127.0.0.1', port: backend.port });
    h.defer(() => socket.destroy());
    const reply = await new Promise<string>((resolve) => {
      let data = '';
      socket.on('data', (c: Buffer) => (data += c.toString('latin1')));
      socket.on('close', () => resolve(data));
      socket.on('error', () => resolve(data));
      socket.write(
        'PUT /target HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n' +
          '0\r\n\r\nDELETE /victim HTTP/1.1\r\nHost: x\r\n\r\n',
      );
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect(reply).not.toMatch(/204/);
    await expectStoreUntouched(before);
  });
});
