// Every row of SPEC §2 against a real store on port 0: keys from the first path
// segment, GET/HEAD/PUT/POST/DELETE, ttl, 405, 413, CR/LF bodies, binary values.
import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import type { BackendService } from '../services/backend/backend-service.ts';
import type { StoreConnection } from '../services/client/index.ts';
import { backendHarness, send, type StoreService } from './helpers/backend-harness.ts';

const h = backendHarness();
const MAX_VALUE_BYTES = 4096;

let store: StoreService;
let backend: BackendService;
let conn: StoreConnection;
let http: ReturnType<typeof request>;

beforeEach(async () => {
  store = await h.store();
  backend = await h.backend(store.port, { maxValueBytes: MAX_VALUE_BYTES });
  conn = h.conn(store.port);
  http = request(`http://127.0.0.1:${backend.port}`);
});

/** Reads the body as raw bytes whatever the Content-Type says. */
const binary = (res: request.Response, done: (err: Error | null, body: Buffer) => void): void => {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => done(null, Buffer.concat(chunks)));
};

describe('the key', () => {
  it.each(['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'])('is missing in / and //k for %s: 400', async (method) => {
    for (const path of ['/', '//k', '//', '/?ttl=5']) {
      const res = await send(backend.port, method, path, method === 'PUT' || method === 'POST' ? 'v' : undefined);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      if (method !== 'HEAD') expect(res.text).toMatch(/^missing key/);
    }
  });

  const invalid = {
    'an encoded space': '/%20',
    'a space inside': '/a%20b',
    'an encoded LF': '/%0A',
    'an encoded CR': '/k%0D',
    'an encoded NUL': '/k%00',
    'an encoded DEL': '/k%7F',
    'more than 250 bytes': `/${'k'.repeat(251)}`,
    'more than 250 bytes once decoded': `/${'%C3%A9'.repeat(126)}`,
    'a bad percent-encoding': '/%ZZ',
    'a truncated percent-encoding': '/ab%4',
    'a lone percent sign': '/ab%',
    'bytes that are not UTF-8': '/%FF%FE',
    'an overlong UTF-8 encoding': '/%C0%AF',
    'an encoded surrogate': '/%ED%A0%80',
  };
  it.each(Object.entries(invalid))('is invalid with %s: 400 for every method, nothing sent to the store', async (_what, path) => {
    for (const method of ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']) {
      const res = await send(backend.port, method, path, method === 'PUT' || method === 'POST' ? 'v' : undefined);
      expect(res.status).toBe(400);
      if (method !== 'HEAD') expect(res.text).toMatch(/^invalid key/);
    }
    expect(await conn.stats()).toMatchObject({ keys: '0' });
  });

  it('may be 250 bytes long, or 250 bytes of UTF-8 after decoding', async () => {
    const ascii = 'k'.repeat(250);
    const utf8 = 'é'.repeat(125); // 2 bytes each
    expect((await http.put(`/${ascii}`).send('a')).status).toBe(204);
    expect((await http.put(`/${encodeURIComponent(utf8)}`).send('b')).status).toBe(204);
    expect((await conn.get(ascii))?.toString()).toBe('a');
    expect((await conn.get(utf8))?.toString()).toBe('b');
  });

  it('is percent-decoded: %2F is part of the key, a raw / ends it, further segments and the query are ignored', async () => {
    expect((await send(backend.port, 'PUT', '/a%2Fb', 'slash')).status).toBe(204);
    expect((await send(backend.port, 'PUT', '/a/b/c?x=1', 'first')).status).toBe(204);
    expect((await conn.get('a/b'))?.toString()).toBe('slash');
    expect((await conn.get('a'))?.toString()).toBe('first');
    expect((await send(backend.port, 'GET', '/a/anything')).text).toBe('first');
    expect((await send(backend.port, 'GET', '/%61')).text).toBe('first');
    expect((await send(backend.port, 'GET', '/caf%C3%A9')).status).toBe(404);
    await conn.set('café', 'crème');
    expect((await send(backend.port, 'GET', '/caf%C3%A9')).text).toBe('crème');
    expect((await send(backend.port, 'GET', '/caf%c3%a9')).text).toBe('crème');
  });

  it('may hold characters that are special in URLs or in the protocol', async () => {
    for (const key of ['a+b', 'x:y@z', 'k=v&w', "it's", '~!$*()', 'SET', 'GET', 'ERROR']) {
      expect((await send(backend.port, 'PUT', `/${encodeURIComponent(key)}`, key.toLowerCase())).status).toBe(204);
      expect((await conn.get(key))?.toString()).toBe(key.toLowerCase());
    }
  });
});

describe('GET and HEAD', () => {
  it('GET answers 200 text/plain; charset=utf-8 with the value, 404 when absent', async () => {
    await conn.set('greeting', 'hello world');
    const res = await http.get('/greeting');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.text).toBe('hello world');
    const missing = await http.get('/absent');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  it('GET of an empty value is 200 with an empty body', async () => {
    await conn.set('empty', '');
    const res = await http.get('/empty');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('0');
    expect(res.text).toBe('');
  });

  it('HEAD answers like GET without a body', async () => {
    await conn.set('greeting', 'hello world');
    const res = await send(backend.port, 'HEAD', '/greeting');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['content-length']).toBe('11');
    expect(res.body.length).toBe(0);
    expect((await send(backend.port, 'HEAD', '/absent')).status).toBe(404);
  });

  it('ignores ?ttl on GET and DELETE, even a malformed one', async () => {
    await conn.set('k', 'v');
    expect((await http.get('/k?ttl=abc')).text).toBe('v');
    expect(await conn.ttl('k')).toBe(-1);
    expect((await http.delete('/k?ttl=0')).status).toBe(204);
    expect(await conn.get('k')).toBeNull();
  });
});

describe('PUT and POST', () => {
  it.each(['put', 'post'] as const)('%s stores the body and answers 204 with no body', async (method) => {
    const res = await http[method]('/k').set('Content-Type', 'text/plain').send('some value');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await conn.get('k'))?.toString()).toBe('some value');
  });

  it('accepts any Content-Type and stores the bytes as they came', async () => {
    for (const type of ['application/json', 'application/x-www-form-urlencoded', 'application/octet-stream', 'image/png', 'nonsense']) {
      const body = type === 'application/json' ? '{"a": [1, 2]}' : 'a=1&b=%20two';
      expect((await http.put('/k').set('Content-Type', type).send(body)).status).toBe(204);
      expect((await conn.get('k'))?.toString()).toBe(body);
    }
    expect((await send(backend.port, 'PUT', '/nocontenttype', 'raw')).status).toBe(204);
    expect((await conn.get('nocontenttype'))?.toString()).toBe('raw');
  });

  it('round-trips every byte but CR and LF, byte for byte', async () => {
    const bytes = Buffer.from([...Array(256).keys()].filter((b) => b !== 0x0a && b !== 0x0d));
    const value = Buffer.concat([bytes, Buffer.from('  spaces  and ünïcödé ✓ '), bytes.reverse()]);
    expect((await http.put('/bin').set('Content-Type', 'application/octet-stream').send(value)).status).toBe(204);
    expect((await conn.get('bin'))?.equals(value)).toBe(true);
    const res = await http.get('/bin').buffer(true).parse(binary);
    expect(res.status).toBe(200);
    expect(Buffer.compare(res.body as Buffer, value)).toBe(0);
  });

  it('stores an empty body as an empty value', async () => {
    expect((await send(backend.port, 'PUT', '/empty')).status).toBe(204);
    expect((await conn.get('empty'))?.length).toBe(0);
    expect((await http.get('/empty')).status).toBe(200);
  });

  it('overwrites, and a plain PUT clears an earlier ttl', async () => {
    expect((await http.put('/k?ttl=100').send('one')).status).toBe(204);
    expect(await conn.ttl('k')).toBeGreaterThan(0);
    expect((await http.put('/k').send('two')).status).toBe(204);
    expect((await http.get('/k')).text).toBe('two');
    expect(await conn.ttl('k')).toBe(-1);
  });

  it('?ttl=<seconds> sets a time to live (SETEX), from 1 to 10^9', async () => {
    expect((await http.put('/short?ttl=1').send('v')).status).toBe(204);
    expect(await conn.ttl('short')).toBe(1);
    expect((await http.post('/long?ttl=1000000000').send('v')).status).toBe(204);
    expect(await conn.ttl('long')).toBeGreaterThan(999_999_000);
    expect((await http.put('/other/segment?x=y&ttl=30').send('v')).status).toBe(204);
    expect(await conn.ttl('other')).toBeGreaterThan(28);
  });

  it.each(['0', '-1', '1.5', 'abc', '', '1e3', '1000000001', '99999999999999999999999', ' 5', '5 ', '0x10', '+5'])(
    'refuses ?ttl=%j with 400 and stores nothing',
    async (ttl) => {
      const res = await send(backend.port, 'PUT', `/k?ttl=${encodeURIComponent(ttl)}`, 'v');
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/^invalid ttl/);
      expect(await conn.get('k')).toBeNull();
    },
  );

  it('refuses a repeated ttl', async () => {
    expect((await send(backend.port, 'PUT', '/k?ttl=5&ttl=6', 'v')).status).toBe(400);
    expect((await send(backend.port, 'PUT', '/k?ttl', 'v')).status).toBe(400);
  });

  it('refuses a body with CR or LF anywhere with 400 and stores nothing', async () => {
    for (const body of ['a\nb', 'a\rb', 'a\r\nb', '\n', '\r', 'trailing\n', 'trailing\r', '\nleading']) {
      const res = await send(backend.port, 'PUT', '/k', body);
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/CR or LF/);
    }
    expect(await conn.get('k')).toBeNull();
  });

  it('takes a value of exactly MAX_VALUE_BYTES and refuses one byte more with 413', async () => {
    expect((await send(backend.port, 'PUT', '/k', 'x'.repeat(MAX_VALUE_BYTES))).status).toBe(204);
    expect((await conn.get('k'))?.length).toBe(MAX_VALUE_BYTES);
    const res = await send(backend.port, 'PUT', '/big', 'x'.repeat(MAX_VALUE_BYTES + 1));
    expect(res.status).toBe(413);
    expect(res.headers.connection).toBe('close');
    expect(await conn.get('big')).toBeNull();
  });

  it('refuses a chunked body once it passes the limit', async () => {
    const res = await new Promise<number>((resolve, reject) => {
      // No Content-Length: Node's client sends Transfer-Encoding: chunked.
      const req = httpRequest({ host: '127.0.0.1', port: backend.port, method: 'PUT', path: '/chunked', agent: false }, (r) => {
        r.resume();
        resolve(r.statusCode!);
      });
      req.on('error', reject);
      for (let i = 0; i < 8; i++) req.write('y'.repeat(1024));
      req.end();
    });
    expect(res).toBe(413);
    expect(await conn.get('chunked')).toBeNull();
  });

  it('answers Expect: 100-continue with 413 before the client sends an oversized body', async () => {
    const { connect } = await import('node:net');
    const socket = connect({ host: '127.0.0.1', port: backend.port });
    h.defer(() => socket.destroy());
    const first = await new Promise<string>((resolve, reject) => {
      socket.once('data', (c: Buffer) => resolve(c.toString('latin1')));
      socket.once('error', reject);
      socket.write(`PUT /big HTTP/1.1\r\nHost: x\r\nContent-Length: ${MAX_VALUE_BYTES + 1}\r\nExpect: 100-continue\r\n\r\n`);
    });
    expect(first).toMatch(/^HTTP\/1\.1 413 /);
    expect(first).not.toMatch(/100 Continue/);
    // Within the limit, the body is invited and stored.
    const small = await send(backend.port, 'PUT', '/small', 'ok', { Expect: '100-continue' });
    expect(small.status).toBe(204);
    expect((await conn.get('small'))?.toString()).toBe('ok');
  });

  it('refuses a declared Content-Length over the limit without reading the body', async () => {
    const res = await send(backend.port, 'PUT', '/big', 'x'.repeat(MAX_VALUE_BYTES * 4));
    expect(res.status).toBe(413);
    expect(res.text).toBe('value too large\n');
  });
});

describe('DELETE and other methods', () => {
  it('DELETE answers 204, also for an absent key', async () => {
    await conn.set('k', 'v');
    expect((await http.delete('/k')).status).toBe(204);
    expect(await conn.get('k')).toBeNull();
    expect((await http.delete('/k')).status).toBe(204);
  });

  it.each(['PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'PURGE'])('%s is 405 with an Allow header', async (method) => {
    const res = await send(backend.port, method, '/k', method === 'PATCH' ? 'v' : undefined);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, PUT, POST, DELETE');
    expect(res.text).toBe('method not allowed\n');
  });
});

describe('the whole round trip', () => {
  it('PUT, GET, HEAD, DELETE, GET', async () => {
    expect((await http.put('/user%3A42').send('{"name":"Ada"}')).status).toBe(204);
    expect((await http.get('/user%3A42')).text).toBe('{"name":"Ada"}');
    expect((await send(backend.port, 'HEAD', '/user:42')).headers['content-length']).toBe('14');
    expect((await http.delete('/user:42')).status).toBe(204);
    expect((await http.get('/user:42')).status).toBe(404);
  });
});
