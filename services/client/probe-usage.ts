import { connect } from 'node:net';
import { StoreProtocolError, StoreTimeoutError, StoreUnavailableError } from './errors.ts';

export interface ProbeTarget {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
}

/**
 * Opens a fresh connection, sends USAGE, resolves with the number of bytes held.
 * A new connection each time on purpose: it proves the listener accepts, which a
 * pooled connection opened long ago would not.
 */
export function probeUsage({ host, port, timeoutMs }: ProbeTarget): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let reply = '';
    const finish = (err: Error | null, usage?: number) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(usage!);
    };
    const timer = setTimeout(() => finish(new StoreTimeoutError(`no USAGE reply from ${host}:${port} within ${timeoutMs} ms`)), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write('USAGE\n'));
    socket.on('data', (chunk: string) => {
      reply += chunk;
      const lf = reply.indexOf('\n');
      if (lf === -1) {
        if (reply.length > 64) finish(new StoreProtocolError('unexpected reply to USAGE'));
        return;
      }
      const m = /^USAGE (\d+)\r?$/.exec(reply.slice(0, lf));
      finish(m ? null : new StoreProtocolError(`unexpected reply to USAGE: ${JSON.stringify(reply.slice(0, Math.min(lf, 64)))}`), m ? Number(m[1]) : undefined);
    });
    socket.on('error', (err) => finish(new StoreUnavailableError(`cannot reach store at ${host}:${port}: ${err.message}`)));
    socket.on('close', () => finish(new StoreUnavailableError(`store at ${host}:${port} closed the connection`)));
  });
}
