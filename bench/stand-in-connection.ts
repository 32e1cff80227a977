// The input and the socket of the socket-free store benchmarks (store-quick.ts, store-ab.ts):
// a StoreServer connection fed pre-built chunks of pipelined commands.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';

/** Just enough of a net.Socket for StoreServer: it records what is written. */
export class StandInSocket extends EventEmitter {
  bytesWritten = 0;
  bytesRead = 0;
  writableLength = 0;
  writableNeedDrain = false;
  remoteAddress = '127.0.0.1';
  remotePort = 1;
  timeout = 0;
  write(data: string | Buffer): boolean {
    this.bytesWritten += data.length;
    return true;
  }
  isPaused(): boolean {
    return false;
  }
  setTimeout(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  end(): this {
    return this;
  }
  destroy(): this {
    return this;
  }
}

export const keyOf = (i: number): string => `key:${String(i).padStart(12, '0')}`;

export interface ChunkShape {
  readonly depth: number;
  readonly keys: number;
  readonly valueSize: number;
}

/** `count` chunks of `depth` commands, 9 GETs to 1 SET, keys drawn from a fixed pseudo-random sequence. */
export function buildChunks({ depth, keys, valueSize }: ChunkShape, count: number): Buffer[] {
  const value = 'v'.repeat(valueSize);
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % keys);
  const chunks: Buffer[] = [];
  for (let c = 0; c < count; c++) {
    let s = '';
    for (let i = 0; i < depth; i++) s += (c * depth + i) % 10 === 9 ? `SET ${keyOf(rand())} ${value}\n` : `GET ${keyOf(rand())}\n`;
    chunks.push(Buffer.from(s));
  }
  return chunks;
}

/** What the benchmarks need of a StoreServer (this checkout's, or another's loaded by store-ab.ts). */
interface BenchServer {
  readonly server: { emit(event: 'connection', socket: Socket): unknown };
}

/**
 * The StoreServer options of the socket-free benchmarks, around the given engine, metrics
 * and logger: limits that no run reaches, no time-outs.
 */
export function benchServerOptions<E, M, L>(engine: E, metrics: M, logger: L, maxLineBytes: number) {
  return { engine, metrics, logger, maxValueBytes: 1 << 20, maxLineBytes, maxConnections: 10, idleTimeoutMs: 0, outputStallTimeoutMs: 0, evictionPolicy: 'lru' as const };
}

/** One stand-in connection to `store`: its 'data' events are the client's input. */
export function connectStandIn(store: BenchServer): StandInSocket {
  const socket = new StandInSocket();
  store.server.emit('connection', socket as unknown as Socket);
  return socket;
}
