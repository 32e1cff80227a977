import { createServer, type Server, type Socket } from 'node:net';
import { listen } from '../../services/shared/listen.ts';

/** What a scripted server does with one line: reply, stay silent, or hang up. */
export type FakeAction = string | { silent: true } | { close: true };

export interface FakeStore {
  readonly port: number;
  readonly received: string[];
  /** The same lines as raw bytes (without the LF). */
  readonly receivedRaw: Buffer[];
  readonly sockets: Set<Socket>;
  /** Resolves when `n` lines in total have arrived. */
  waitForLines(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP server that answers each line through `handle`, for client tests that need a
 * store that lies, hangs or dies on cue.
 */
export async function startFakeStore(handle: (line: string) => FakeAction, port = 0): Promise<FakeStore> {
  const received: string[] = [];
  const receivedRaw: Buffer[] = [];
  const sockets = new Set<Socket>();
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      let lf: number;
      while ((lf = buffered.indexOf(0x0a)) !== -1) {
        const raw = buffered.subarray(0, lf);
        buffered = buffered.subarray(lf + 1);
        const line = raw.toString('utf8');
        received.push(line);
        receivedRaw.push(Buffer.from(raw));
        for (const w of waiters.filter((w) => received.length >= w.n)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
        const action = handle(line);
        if (typeof action === 'string') socket.write(action + '\n');
        else if ('close' in action) {
          socket.destroy();
          return;
        }
      }
    });
  });
  const bound = await listen(server, port, '127.0.0.1');
  return {
    port: bound,
    received,
    receivedRaw,
    sockets,
    waitForLines: (n) => (received.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
