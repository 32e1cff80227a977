// The store's client-socket I/O in C (services/store/network/native/socket-io.c, native-io.ts):
// built by `npm ci` where a C compiler and Node's headers are present, which CI has. The
// store suites run both with it (the default) and through Node (vitest.config.ts); here,
// what is particular to it.
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { chooseSocketIo, loadSocketIo, SocketFdCache } from '../services/store/network/native-io.ts';
import { socketFd } from '../services/shared/node-internals.ts';
import { createLogger } from '../services/shared/logger.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

afterEach(destroyAll);

const loaded = loadSocketIo();
const built = 'io' in loaded;

describe('native socket I/O', () => {
  it('is built (npm ci compiles it; CI has a compiler, so there it must be)', (ctx) => {
    if (!built && process.env.CI === undefined) ctx.skip(`native socket I/O not built here: ${'reason' in loaded ? loaded.reason : ''}`);
    expect(loaded).toHaveProperty('io');
  });

  describe.skipIf(!built)('a store using it', () => {
    it('reads and writes every client through it, and says so in its metric and ready line', async () => {
      const store = await startTestStore({ nativeIo: 'on' });
      const [a, b] = await Promise.all([store.client(), store.client()]);
      expect(await a.request('SET k native')).toBe('OK');
      expect(await b.request('GET k')).toBe(`VALUE ${b64('native')}`);
      const flows = store.service.server.connectionFlows();
      expect(flows.length).toBe(2);
      expect(flows.every((f) => f.nativeReads && f.sharedReads && f.bytesRead > 0)).toBe(true);
      expect((await store.admin('/metrics')).body).toMatch(/^kvstore_native_io 1$/m);
      expect(store.logs.find((l) => l.msg === STORE_READY)).toMatchObject({ nativeIo: true });
    });

    it('answers all a client sent before its FIN, then closes the connection', async () => {
      const store = await startTestStore({ nativeIo: 'on' });
      const socket = connect({ port: store.port, host: '127.0.0.1' });
      await once(socket, 'connect');
      let text = '';
      socket.setEncoding('latin1').on('data', (c: string) => (text += c));
      socket.end('SET a 1\nGET a\nPING\n'); // the FIN follows the lines at once
      await once(socket, 'end');
      expect(text).toBe(`OK\nVALUE ${b64('1')}\nPONG\n`);
      await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
    });

    it('drops a connection reset by its client, and serves the next ones on the same descriptor numbers', async () => {
      const store = await startTestStore({ nativeIo: 'on', logLevel: 'debug' });
      for (let round = 0; round < 3; round++) {
        const clients = await Promise.all(Array.from({ length: 20 }, () => store.client()));
        const replies = await Promise.all(clients.map((c, i) => c.request(`SET k${round}-${i} v${i}`).then(() => c.request(`GET k${round}-${i}`))));
        expect(replies).toEqual(clients.map((_, i) => `VALUE ${b64(`v${i}`)}`));
        for (const c of clients) c.socket.resetAndDestroy(); // RST: the store's next read fails with ECONNRESET
        await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 10 });
      }
      expect(store.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
      // Each reset reached its socket as Node's own read path reports one.
      expect(store.logs.filter((l) => l.msg === 'client socket error' && l.err === 'read ECONNRESET').length).toBeGreaterThan(0);
    });

    it('is not used with STORE_NATIVE_IO=off', async () => {
      const store = await startTestStore({ nativeIo: 'off' });
      const client = await store.client();
      expect(await client.request('PING')).toBe('PONG');
      expect(store.service.server.connectionFlows().every((f) => !f.nativeReads)).toBe(true);
      expect((await store.admin('/metrics')).body).toMatch(/^kvstore_native_io 0$/m);
    });
  });
});

describe('STORE_NATIVE_IO', () => {
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({ name: 'kvstore', level: 'info', destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } });
  const unavailable = () => ({ reason: 'not built (test)' });
  const available = () => ({ io: { writeRange: () => 0 } as never });

  it('auto: the add-on when it loads, else Node with one log line saying why', () => {
    expect(chooseSocketIo('auto', logger, available)).toBeDefined();
    logs.length = 0;
    expect(chooseSocketIo('auto', logger, unavailable)).toBeUndefined();
    expect(logs).toMatchObject([{ msg: 'native socket I/O unavailable: client sockets go through Node', why: 'not built (test)' }]);
  });

  it('on: the store does not start without it, and the error says why', () => {
    expect(chooseSocketIo('on', logger, available)).toBeDefined();
    expect(() => chooseSocketIo('on', logger, unavailable)).toThrow('STORE_NATIVE_IO=on, but the native socket I/O is unavailable: not built (test)');
  });

  it('off: never loaded', () => {
    const load = vi.fn(available);
    expect(chooseSocketIo('off', logger, load)).toBeUndefined();
    expect(load).not.toHaveBeenCalled();
  });
});

describe('SocketFdCache', () => {
  it("reads a socket's descriptor once per handle, and gives -1 once the socket is closed", async () => {
    const listener = createServer();
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    const { port } = listener.address() as { port: number };
    const sockets: Socket[] = [];
    listener.on('connection', (s: Socket) => sockets.push(s));
    try {
      const a = connect({ port, host: '127.0.0.1' });
      await once(a, 'connect');
      const cache = new SocketFdCache();
      const fd = socketFd(a);
      expect(fd).toBeGreaterThanOrEqual(0);
      expect(cache.of(a)).toBe(fd);
      expect(cache.of(a)).toBe(fd);
      a.destroy();
      expect(cache.of(a)).toBe(-1); // the handle is dropped in destroy() itself
      // Another socket through the same cache (as a new connection may get the same number): its own descriptor.
      const b = connect({ port, host: '127.0.0.1' });
      await once(b, 'connect');
      expect(cache.of(b)).toBe(socketFd(b));
      expect(cache.of(b)).toBeGreaterThanOrEqual(0);
      b.destroy();
    } finally {
      for (const s of sockets) s.destroy();
      listener.close();
    }
  });
});
