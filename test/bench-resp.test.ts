// The comparison with Redis drives it with kv bench's load generator over RESP
// (bench/redis/): the RESP encoder, the RESP reply scanner, and whole runs against a
// minimal RESP server, in one thread and in worker threads.
import { spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPECT_GET, EXPECT_SET } from '../services/cli/bench/reply-scanner.ts';
import { listen } from '../services/shared/listen.ts';
import { createRespEncoder, RespReplyScanner } from '../bench/redis/resp-protocol.ts';
import { scanBothWays } from './helpers/scan-both-ways.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `node bench/redis/resp-bench.ts` against one server, as `npm run bench` runs it. */
function kvBench(port: number, args: string[]): Promise<{ code: number | null; out: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bench/redis/resp-bench.ts', '--port', String(port), '--warmup', '0', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, stderr }));
  });
}

/**
 * A minimal RESP server: parses arrays of bulk strings, keeps a map, answers SET with
 * +OK and GET with a bulk string or a null, and counts every command it ran.
 */
async function startFakeRedis(): Promise<{ port: number; commands: () => number; close: () => Promise<void> }> {
  const data = new Map<string, Buffer>();
  let commands = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const replies: Buffer[] = [];
      for (;;) {
        const parsed = parseArray(buf);
        if (!parsed) break;
        buf = buf.subarray(parsed.next);
        commands++;
        const [name, key, value] = parsed.items;
        const cmd = name!.toString().toUpperCase();
        if (cmd === 'SET') {
          data.set(key!.toString(), value!);
          replies.push(Buffer.from('+OK\r\n'));
        } else if (cmd === 'GET') {
          const v = data.get(key!.toString());
          replies.push(v ? Buffer.concat([Buffer.from(`$${v.length}\r\n`), v, Buffer.from('\r\n')]) : Buffer.from('$-1\r\n'));
        } else {
          replies.push(Buffer.from('-ERR unknown command\r\n'));
        }
      }
      if (replies.length) socket.write(Buffer.concat(replies));
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    port,
    commands: () => commands,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** `*N\r\n` then N `$len\r\n<bytes>\r\n`; undefined until the whole array is buffered. */
function parseArray(buf: Buffer): { items: Buffer[]; next: number } | undefined {
  const lineEnd = (from: number) => {
    const i = buf.indexOf('\r\n', from);
    return i === -1 ? undefined : i;
  };
  let end = lineEnd(0);
  if (end === undefined) return undefined;
  if (buf[0] !== 0x2a) throw new Error('fake redis: expected an array');
  const n = Number(buf.toString('latin1', 1, end));
  let pos = end + 2;
  const items: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    end = lineEnd(pos);
    if (end === undefined) return undefined;
    const len = Number(buf.toString('latin1', pos + 1, end));
    if (buf.length < end + 2 + len + 2) return undefined;
    items.push(buf.subarray(end + 2, end + 2 + len));
    pos = end + 2 + len + 2;
  }
  return { items, next: pos };
}

describe('resp-bench: kv bench\'s load generator over RESP', () => {
  it('drives a RESP server with arrays and counts every reply', async () => {
    const redis = await startFakeRedis();
    cleanups.push(() => redis.close());
    const r = await kvBench(redis.port, ['-n', '2000', '-c', '3', '-P', '7', '-r', '100', '--value-size', '20', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.out);
    expect(result).toMatchObject({ ok: true, protocol: 'resp', requests: 2000, errors: 0, wrongReplies: 0, prefill: { requests: 100 } });
    expect(redis.commands()).toBe(2000 + 100);
  });

  it('a GET reply of the wrong size is wrong', async () => {
    const redis = await startFakeRedis();
    cleanups.push(() => redis.close());
    // Fill with 20-byte values, then expect 21: every GET hit is the wrong size.
    expect((await kvBench(redis.port, ['-n', '0', '-r', '5', '--value-size', '20'])).code).toBe(0);
    const r = await kvBench(redis.port, ['-n', '50', '-c', '1', '-r', '5', '--value-size', '21', '--ratio', '1:0', '--no-prefill', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out)).toMatchObject({ requests: 50, wrongReplies: 50, misses: 0 });
  });

  it('worker threads load the same protocol', async () => {
    const redis = await startFakeRedis();
    cleanups.push(() => redis.close());
    const r = await kvBench(redis.port, ['-n', '1000', '-c', '4', '--threads', '2', '-r', '50', '--value-size', '10', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ ok: true, protocol: 'resp', threads: 2, requests: 1000, wrongReplies: 0 });
    expect(redis.commands()).toBe(1000 + 50);
  });
});

describe('RESP encoder', () => {
  it('writes RESP arrays', () => {
    const enc = createRespEncoder(3);
    const buf = Buffer.alloc(enc.getLength + enc.setLength);
    enc.writeSet(buf, enc.writeGet(buf, 0, 7), 8);
    expect(buf.toString()).toBe('*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000007\r\n*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000008\r\n$3\r\nxxx\r\n');
  });
});

describe('RESP reply scanner', () => {
  const G = EXPECT_GET;
  const S = EXPECT_SET;

  it('resp: bulk strings of the right size, nulls, errors and wrong sizes', () => {
    const stream = '+OK\r\n$5\r\nxxxxx\r\n$-1\r\n-ERR oops\r\n$3\r\nxxx\r\n:1\r\n$5\r\nxx\nxx\r\n';
    expect(scanBothWays(() => new RespReplyScanner(5), [S, G, G, S, G, S, G], stream)).toEqual({ done: 7, misses: 1, errors: 1, wrong: 2, broken: false });
  });

  it('resp: gives up on reply types it cannot count', () => {
    const s = new RespReplyScanner(5);
    s.expect = Uint8Array.from([G, G]);
    expect(s.feed(Buffer.from('+OK\r\n*1\r\n'))).toBe(1);
    expect(s.broken).toBe(true);
  });
});
