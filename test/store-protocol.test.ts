import { afterEach, describe, expect, it, vi } from 'vitest';
import { destroyAll } from './helpers/cleanup.ts';
import { LineClient } from './helpers/line-client.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

afterEach(destroyAll);

describe('store protocol: the commands of SPEC §1', () => {
  it('SET, GET, DELETE, USAGE, PING answer as specified', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('USAGE')).toBe('USAGE 0');
    expect(await c.request('GET greeting')).toBe('NOT_FOUND');
    expect(await c.request('SET greeting hello world')).toBe('OK');
    expect(await c.request('GET greeting')).toBe(`VALUE ${b64('hello world')}`);
    expect(await c.request('USAGE')).toBe(`USAGE ${'greeting'.length + 'hello world'.length}`);
    expect(await c.request('SET greeting hi')).toBe('OK');
    expect(await c.request('USAGE')).toBe(`USAGE ${'greeting'.length + 2}`);
    expect(await c.request('DELETE greeting')).toBe('OK');
    expect(await c.request('DELETE greeting')).toBe('OK'); // idempotent
    expect(await c.request('GET greeting')).toBe('NOT_FOUND');
    expect(await c.request('USAGE')).toBe('USAGE 0');
    expect(await c.request('PING')).toBe('PONG');
  });

  it('SET k with an empty value stores "" and GET answers `VALUE `', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('SET k ')).toBe('OK');
    expect(await c.request('GET k')).toBe('VALUE ');
    expect(await c.request('USAGE')).toBe('USAGE 1');
  });

  it('keeps leading, inner and trailing spaces of a value, and a CR inside it', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('SET k   two  spaces  ')).toBe('OK');
    expect(await c.request('GET k')).toBe(`VALUE ${b64('  two  spaces  ')}`);
    c.send('SET r a\rb\r\n');
    expect(await c.line()).toBe('OK');
    expect(await c.request('GET r')).toBe(`VALUE ${b64('a\rb')}`);
  });

  it('round-trips every byte but LF, not UTF-8, through base64', async () => {
    const store = await startTestStore();
    const c = await store.client();
    const value = Buffer.from(Array.from({ length: 256 }, (_, i) => i).filter((i) => i !== 0x0a && i !== 0x0d).concat([0x0d, 0x41]));
    expect(await c.request(Buffer.concat([Buffer.from('SET bin '), value]))).toBe('OK');
    const reply = await c.request('GET bin');
    expect(reply.startsWith('VALUE ')).toBe(true);
    expect(Buffer.from(reply.slice(6), 'base64').equals(value)).toBe(true);
    expect(await c.request('USAGE')).toBe(`USAGE ${3 + value.length}`);
  });

  it('accepts multi-byte UTF-8 keys and counts their bytes in USAGE', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('SET clé v')).toBe('OK');
    expect(await c.request('GET clé')).toBe(`VALUE ${b64('v')}`);
    expect(await c.request('USAGE')).toBe(`USAGE ${Buffer.byteLength('clé') + 1}`);
  });

  it('command names are case-insensitive and CRLF works (nc -C, telnet)', async () => {
    const store = await startTestStore();
    const c = await store.client();
    c.send('set k v\r\ngEt k\r\nPiNg\r\nusage\r\ndelete k\r\n');
    expect(await c.lines(5)).toEqual(['OK', `VALUE ${b64('v')}`, 'PONG', 'USAGE 2', 'OK']);
  });

  it('SETEX, TTL and EXPIRE follow the store clock; TTL rounds up; SET clears a TTL', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request('TTL none')).toBe('NOT_FOUND');
    expect(await c.request('EXPIRE none 5')).toBe('NOT_FOUND');
    expect(await c.request('SETEX s 1 v')).toBe('OK');
    expect(await c.request('TTL s')).toBe('TTL 1');
    expect(await c.request('SET p v')).toBe('OK');
    expect(await c.request('TTL p')).toBe('TTL -1');
    expect(await c.request('EXPIRE p 10')).toBe('OK');
    expect(await c.request('TTL p')).toBe('TTL 10');
    store.clock.advance(500);
    expect(await c.request('TTL p')).toBe('TTL 10');
    expect(await c.request('GET s')).toBe(`VALUE ${b64('v')}`);
    store.clock.advance(600); // s is 100 ms past its deadline
    expect(await c.request('GET s')).toBe('NOT_FOUND');
    expect(await c.request('TTL s')).toBe('NOT_FOUND');
    expect(await c.request('TTL p')).toBe('TTL 9');
    expect(await c.request('SET p w')).toBe('OK');
    expect(await c.request('TTL p')).toBe('TTL -1');
  });

  it('an expired key leaves USAGE without being read (active sweep)', async () => {
    const store = await startTestStore({}, { sweepIntervalMs: 10 });
    const c = await store.client();
    expect(await c.request('SETEX gone 2 0123456789')).toBe('OK');
    expect(await c.request('SET kept v')).toBe('OK');
    store.clock.advance(2500);
    await vi.waitFor(() => expect(store.service.engine.usageBytes).toBe(5), { timeout: 5000, interval: 10 });
    expect(await c.request('USAGE')).toBe('USAGE 5');
  });

  it('STATS is one line of key=value pairs with the required fields', async () => {
    const store = await startTestStore({ maxMemoryBytes: 5000 });
    const c = await store.client();
    await c.request('SET a 123');
    await c.request('GET a');
    await c.request('GET b');
    const reply = await c.request('STATS');
    expect(reply).toMatch(/^STATS( [a-z_]+=\S+)+$/);
    const stats = Object.fromEntries(reply.slice(6).split(' ').map((p) => p.split('=')));
    expect(stats).toMatchObject({ keys: '1', usage_bytes: '4', max_memory_bytes: '5000', connections: '1', evictions: '0', expired: '0', hits: '1', misses: '1' });
    expect(Number(stats.uptime_seconds)).toBeGreaterThanOrEqual(0);
  });

  it('QUIT answers BYE, closes, and runs nothing pipelined after it', async () => {
    const store = await startTestStore();
    const c = await store.client();
    c.send('SET before 1\nQUIT\nSET after 1\nPING\n');
    await c.closed;
    expect(c.received).toEqual(['OK', 'BYE']);
    expect(c.error).toBeUndefined();
    const d = await store.client();
    expect(await d.request('GET before')).toBe(`VALUE ${b64('1')}`);
    expect(await d.request('GET after')).toBe('NOT_FOUND');
  });
});

describe('store protocol: errors', () => {
  it.each([
    ['', 'ERROR empty command'],
    ['   ', 'ERROR unknown command'],
    ['FLUSHALL', 'ERROR unknown command'],
    ['GET', 'ERROR wrong number of arguments'],
    ['GET a b', 'ERROR wrong number of arguments'],
    ['SET k', 'ERROR wrong number of arguments'],
    ['PING now', 'ERROR wrong number of arguments'],
    ['GET  k', 'ERROR invalid key'],
    ['SET  v', 'ERROR invalid key'],
    [`GET ${'k'.repeat(251)}`, 'ERROR invalid key'],
    ['GET a\x01', 'ERROR invalid key'],
    ['SETEX k 0 v', 'ERROR invalid expire time'],
    ['SETEX k 1000000001 v', 'ERROR invalid expire time'],
    ['EXPIRE k soon', 'ERROR invalid expire time'],
  ])('%j → %s, and the connection stays usable', async (line, reply) => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request(line)).toBe(reply);
    expect(await c.request('PING')).toBe('PONG');
  });

  it('a key that is not UTF-8 is invalid', async () => {
    const store = await startTestStore();
    const c = await store.client();
    expect(await c.request(Buffer.from([0x47, 0x45, 0x54, 0x20, 0xc3, 0x28]))).toBe('ERROR invalid key');
  });

  it('a value over MAX_VALUE_BYTES on a line within the bound is refused, and the connection stays', async () => {
    const store = await startTestStore({ maxValueBytes: 16 });
    const c = await store.client();
    expect(await c.request(`SET k ${'x'.repeat(16)}`)).toBe('OK');
    expect(await c.request(`SET k ${'y'.repeat(17)}`)).toBe('ERROR value too large');
    expect(await c.request(`SETEX k 5 ${'y'.repeat(17)}`)).toBe('ERROR value too large');
    expect(await c.request('GET k')).toBe(`VALUE ${b64('x'.repeat(16))}`);
  });

  it('a line over the bound gets `ERROR line too long` after the lines before it, then the connection closes', async () => {
    const store = await startTestStore({ maxValueBytes: 16 }); // bound: 528 bytes
    const c = await store.client();
    c.send(`PING\nSET k ${'x'.repeat(600)}\nPING\n`);
    await c.closed;
    expect(c.received).toEqual(['PONG', 'ERROR line too long']);
    const warnings = store.logs.filter((l) => l.msg === 'line too long: closing the connection');
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings)).not.toContain('xxxx');
  });

  it('an over-long line is refused as soon as the bound is passed, before its LF arrives', async () => {
    const store = await startTestStore({ maxValueBytes: 16 });
    const c = await store.client();
    c.send('SET k ');
    for (let i = 0; i < 10; i++) c.send('z'.repeat(100));
    await c.closed;
    expect(c.received).toEqual(['ERROR line too long']);
    expect(store.logs.filter((l) => l.msg === 'line too long: closing the connection')).toHaveLength(1);
  });

  it('a line exactly at the bound is framed (and then judged on its value)', async () => {
    const store = await startTestStore({ maxValueBytes: 16 });
    const c = await store.client();
    const line = `SET k ${'v'.repeat(528 - 6)}`;
    expect(Buffer.byteLength(line)).toBe(528);
    expect(await c.request(line)).toBe('ERROR value too large');
    expect(await c.request('PING')).toBe('PONG');
    expect(await c.request(`${line}v`)).toBe('ERROR line too long');
    await c.closed;
  });
});

describe('store protocol: pipelining and concurrency', () => {
  it('answers 10,000 commands sent in one write, in order', async () => {
    const store = await startTestStore();
    const c = await store.client();
    const commands: string[] = [];
    const expected: string[] = [];
    for (let i = 0; i < 2500; i++) {
      commands.push(`SET key:${i} value ${i}`, `GET key:${i}`, `GET missing:${i}`, i % 2 ? 'PING' : `DELETE key:${i}`);
      expected.push('OK', `VALUE ${b64(`value ${i}`)}`, 'NOT_FOUND', i % 2 ? 'PONG' : 'OK');
    }
    c.send(commands.join('\n') + '\n');
    expect(await c.lines(10_000)).toEqual(expected);
    expect(await c.request('USAGE')).toBe(`USAGE ${Array.from({ length: 1250 }, (_, j) => `key:${2 * j + 1}`.length + `value ${2 * j + 1}`.length).reduce((a, n) => a + n, 0)}`);
  });

  it('serves 200 concurrent clients, each seeing its own writes', async () => {
    const store = await startTestStore();
    const clients = await Promise.all(Array.from({ length: 200 }, () => store.client()));
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(200), { interval: 5 });
    const replies = await Promise.all(
      clients.map(async (c, i) => {
        c.send(`SET client:${i} ${i}\nGET client:${i}\nPING\n`);
        return c.lines(3);
      }),
    );
    replies.forEach((r, i) => expect(r).toEqual(['OK', `VALUE ${b64(String(i))}`, 'PONG']));
    expect(store.service.engine.keyCount).toBe(200);
  });

  it('answers a command split across many writes', async () => {
    const store = await startTestStore();
    const c = await store.client();
    const line = 'SET split some value\r\n';
    for (const ch of line) c.send(ch);
    expect(await c.line()).toBe('OK');
    expect(await c.request('GET split')).toBe(`VALUE ${b64('some value')}`);
  });
});

describe('store protocol: connections', () => {
  it('a client that half-closes after sending (nc -N) gets every reply, then the server ends', async () => {
    const store = await startTestStore();
    const c = await store.client();
    c.socket.end('SET k v\nGET k\nPING\nGET k'); // the last line has no LF: it is not a command
    await c.closed;
    expect(c.received).toEqual(['OK', `VALUE ${b64('v')}`, 'PONG']);
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { interval: 5 });
  });

  it('a client can reconnect and see earlier writes', async () => {
    const store = await startTestStore();
    const a = await store.client();
    await a.request('SET shared 1');
    a.destroy();
    const b = await LineClient.connect(store.port);
    expect(await b.request('GET shared')).toBe(`VALUE ${b64('1')}`);
  });
});
