import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSocketIo } from '../services/store/network/native-io.ts';
import { ReplyBuffer, ReplyBufferPool } from '../services/store/network/reply-buffer.ts';
import { NodeClientSocket } from '../services/store/network/node-client-socket.ts';

// Replies go to write(2) through fs.writeSync, or through the native add-on where it is
// built (native-io.test.ts fails in CI when it is not); the same rules hold for both.
const loaded = loadSocketIo();
const writers = [
  { writer: 'fs.writeSync', io: undefined, available: true },
  { writer: 'the native add-on', io: 'io' in loaded ? loaded.io : undefined, available: 'io' in loaded },
];

/** A connected pair on loopback: `server` is the store's side, `client` the peer's. */
async function socketPair(): Promise<{ listener: Server; server: Socket; client: Socket }> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as { port: number };
  const accepted = once(listener, 'connection') as Promise<[Socket]>;
  const client = connect({ port, host: '127.0.0.1' });
  const [server] = await accepted;
  await once(client, 'connect').catch(() => undefined);
  return { listener, server, client };
}

/** Collects what the peer receives until it has `bytes`. */
function receive(client: Socket, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  return new Promise((resolve) => {
    const onData = (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (got >= bytes) {
        client.off('data', onData);
        resolve(Buffer.concat(chunks));
      }
    };
    client.on('data', onData);
  });
}

const open: { listener: Server; server: Socket; client: Socket }[] = [];
afterEach(() => {
  for (const p of open.splice(0)) {
    p.client.destroy();
    p.server.destroy();
    p.listener.close();
  }
});

describe.each(writers)('ReplyBuffer writes through $writer', ({ io, available }) => {
  if (!available) return it.skip('the native add-on is not built here');
  it.runIf(process.platform !== 'win32')('hands a turn of replies to the kernel directly when nothing is queued', async () => {
    const pair = await socketPair();
    open.push(pair);
    const out = new NodeClientSocket(pair.server, io, () => {});
    const replies = new ReplyBuffer(new ReplyBufferPool());
    const text = 'VALUE aGVsbG8=\nOK\nNOT_FOUND\n';
    const got = receive(pair.client, text.length * 3);
    for (let i = 0; i < 3; i++) {
      replies.ascii(text);
      expect(replies.writeTo(out)).toBe(text.length);
    }
    expect((await got).toString()).toBe(text.repeat(3));
    expect(replies.handedBytes).toBe(text.length * 3);
    // The socket's own count stays 0: every byte went to write(2) without its stream.
    expect(pair.server.bytesWritten).toBe(0);
    expect(pair.server.writableLength).toBe(0);
  });

  it('queues in the socket what the kernel did not take, in order, once the peer stops reading', async () => {
    const pair = await socketPair();
    open.push(pair);
    const out = new NodeClientSocket(pair.server, io, () => {});
    pair.client.pause(); // the kernel's buffers fill up
    const replies = new ReplyBuffer(new ReplyBufferPool());
    // 60 KiB turns, each line numbered, until the socket had to queue some (or 256 MiB: the test would fail below).
    const lines: string[] = [];
    let turn = 0;
    while (pair.server.writableLength === 0 && turn < 4096) {
      let text = '';
      while (text.length < 60 * 1024) text += `line ${turn}:${lines.length}\n`, lines.push(`line ${turn}:${lines.length}`);
      replies.ascii(text);
      replies.writeTo(out);
      turn++;
    }
    expect(pair.server.writableLength).toBeGreaterThan(0); // the stream holds the rest
    // Two more turns while it is queued: they must follow it, not jump ahead through write(2).
    for (let k = 0; k < 2; k++) {
      let text = '';
      for (let j = 0; j < 100; j++) text += `tail ${k}:${j}\n`, lines.push(`tail ${k}:${j}`);
      replies.ascii(text);
      replies.writeTo(out);
    }
    const expected = lines.join('\n') + '\n';
    expect(replies.handedBytes).toBe(expected.length);
    const got = receive(pair.client, expected.length);
    pair.client.resume();
    expect((await got).toString() === expected).toBe(true);
  });

  it('leaves an encrypted socket to its stream: its handle would give the plain TCP descriptor', async () => {
    const pair = await socketPair();
    open.push(pair);
    const out = new NodeClientSocket(pair.server, io, () => {});
    // What tls.TLSSocket says of itself; its handle would answer `fd` with the TCP connection's.
    Object.defineProperty(pair.server, 'encrypted', { value: true });
    const replies = new ReplyBuffer(new ReplyBufferPool());
    const got = receive(pair.client, 'OK\n'.length);
    replies.ascii('OK\n');
    replies.writeTo(out);
    expect((await got).toString()).toBe('OK\n');
    expect(pair.server.bytesWritten).toBe(3); // through socket.write, which a TLS socket encrypts
  });

  it('never overtakes bytes the socket holds queued', async () => {
    const pair = await socketPair();
    open.push(pair);
    const out = new NodeClientSocket(pair.server, io, () => {});
    const replies = new ReplyBuffer(new ReplyBufferPool());
    // Queued in the stream and not yet written (corked): a direct write now would jump ahead of it.
    pair.server.cork();
    pair.server.write('first\n');
    replies.ascii('second\n');
    replies.writeTo(out);
    const got = receive(pair.client, 'first\nsecond\n'.length);
    pair.server.uncork();
    expect((await got).toString()).toBe('first\nsecond\n');
  });
});
