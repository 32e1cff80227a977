// SIGTERM to a backend process under keep-alive load: every request whose bytes were
// sent on an open connection gets a response (never a reset or a hang-up), statuses are
// only 2xx or 503, and every write answered 204 is in the store. With a drain delay,
// readiness fails first while requests are still served.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreConnection } from '../services/client/store-connection.ts';
import { backendScript, freePort, startServiceProcess, storeScript, type ServiceProcess } from './helpers/service-process.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { BACKEND_READY, STORE_READY } from '../services/shared/ready-line.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface ClientOutcome {
  /** status → count */
  readonly statuses: Map<number, number>;
  /** Keys whose PUT was answered 204. */
  readonly written: string[];
  /** A request was outstanding when the connection ended (reset, hang-up): the client cannot know its outcome. */
  unanswered: number;
  /** How the connection ended. */
  end: string;
}

/**
 * One keep-alive HTTP/1.1 connection that sends PUTs back to back (the next one as soon
 * as the previous response is complete) until the server closes the connection. It
 * never reconnects: the backend is meant to be leaving.
 */
function keepAliveWriter(port: number, id: number, onResponse: () => void): { done: Promise<ClientOutcome>; socket: Socket } {
  const outcome: ClientOutcome = { statuses: new Map(), written: [], unanswered: 0, end: '' };
  const socket = connect({ host: '127.0.0.1', port });
  cleanups.push(() => socket.destroy());
  let seq = 0;
  let outstanding: string | undefined;
  let buffered = '';
  let closeAfter = false;
  const sendNext = (): void => {
    const key = `w${id}-${seq++}`;
    const body = `value-${key}`;
    outstanding = key;
    socket.write(`PUT /${key} HTTP/1.1\r\nHost: t\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  };
  socket.setEncoding('latin1');
  socket.on('connect', sendNext);
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buffered.slice(0, end).split('\r\n');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buffered.slice(0, end + 2))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = buffered.slice(end + 4 + length);
      const status = Number(head[0]!.split(' ')[1]);
      outcome.statuses.set(status, (outcome.statuses.get(status) ?? 0) + 1);
      if (status === 204) outcome.written.push(outstanding!);
      outstanding = undefined;
      closeAfter = head.some((l) => /^connection: *close$/i.test(l));
      onResponse();
      if (!closeAfter) sendNext();
    }
  });
  const done = new Promise<ClientOutcome>((resolve) => {
    let error = '';
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => {
      if (outstanding !== undefined) outcome.unanswered++;
      outcome.end = error || (closeAfter ? 'closed after Connection: close' : 'closed');
      resolve(outcome);
    });
  });
  return { done, socket };
}

async function startStack(backendEnv: Record<string, string>): Promise<{ store: ServiceProcess; backend: ServiceProcess; storePort: number; port: number; metricsPort: number }> {
  const storePort = await freePort();
  const store = await startServiceProcess(storeScript, { STORE_HOST: '127.0.0.1', STORE_PORT: String(storePort), STORE_METRICS_PORT: '0' }, STORE_READY);
  cleanups.push(() => store.stop('SIGKILL'));
  const backend = await startServiceProcess(
    backendScript,
    { HOST: '127.0.0.1', PORT: '0', BACKEND_METRICS_PORT: '0', KV_STORE: `127.0.0.1:${storePort}`, ...backendEnv },
    BACKEND_READY,
  );
  cleanups.push(() => backend.stop('SIGKILL'));
  const ready = backend.logs.find((l) => l.msg === BACKEND_READY)!;
  const port = ready.port as number;
  const metricsPort = ready.metricsPort as number;
  await waitUntil('the backend ready', async () => ((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200 ? true : undefined), { everyMs: 20 });
  return { store, backend, storePort, port, metricsPort };
}

/** Every key answered 204 holds its value in the store. */
async function missingWrites(storePort: number, outcomes: ClientOutcome[]): Promise<string[]> {
  const conn = new StoreConnection({ host: '127.0.0.1', port: storePort, timeoutMs: 5000, reconnect: false });
  cleanups.push(() => conn.destroy());
  const missing: string[] = [];
  for (const o of outcomes) {
    for (const key of o.written) if ((await conn.get(key))?.toString() !== `value-${key}`) missing.push(key);
  }
  return missing;
}

const summary = (outcomes: ClientOutcome[]) => {
  const statuses: Record<string, number> = {};
  for (const o of outcomes) for (const [s, n] of o.statuses) statuses[s] = (statuses[s] ?? 0) + n;
  const ends: Record<string, number> = {};
  for (const o of outcomes) ends[o.end] = (ends[o.end] ?? 0) + 1;
  return { statuses, ends, unanswered: outcomes.reduce((n, o) => n + o.unanswered, 0), connectionsUnanswered: outcomes.filter((o) => o.unanswered > 0).length };
};

describe('backend SIGTERM under keep-alive load', () => {
  it.each([0, 300])('BACKEND_SHUTDOWN_DELAY_MS=%i: answers every request sent on an open connection, with 2xx or 503, and keeps every write it acknowledged', { timeout: 60_000 }, async (delayMs) => {
    const stack = await startStack({ BACKEND_SHUTDOWN_DELAY_MS: String(delayMs) });
    const N = 32;
    let answered = 0;
    let reached!: () => void;
    const enough = new Promise<void>((resolve) => (reached = resolve));
    const clients = Array.from({ length: N }, (_, i) =>
      keepAliveWriter(stack.port, i, () => {
        if (++answered === N * 20) reached();
      }),
    );
    await enough;
    const exited = stack.backend.stop('SIGTERM');
    const outcomes = await Promise.all(clients.map((c) => c.done));
    expect(await exited).toBe(0);

    const s = summary(outcomes);
    console.log(`backend SIGTERM under keep-alive load, delay ${delayMs} ms: ${N} connections, ${JSON.stringify(s)}`);
    expect(s.unanswered, JSON.stringify(s)).toBe(0);
    for (const status of Object.keys(s.statuses)) expect(['204', '503']).toContain(status);
    expect(await missingWrites(stack.storePort, outcomes)).toEqual([]);
  });
});
