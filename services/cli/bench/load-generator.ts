import { connect, isIP, type Socket } from 'node:net';
import { tlsModule } from '../../shared/builtins.ts';
import type { StoreTlsConnectOptions } from '../../client/client-tls.ts';
import { decodeReply, ERROR_REASONS } from '../../protocol/replies.ts';
import type { BenchProtocol } from './bench-protocol.ts';
import type { CommandEncoder } from './command-encoder.ts';
import { LatencyHistogram } from './latency-histogram.ts';
import { EXPECT_GET, EXPECT_SET, type ReplyScanner } from './reply-scanner.ts';

export interface LoadOptions {
  readonly host: string;
  readonly port: number;
  /** The store's line protocol for `kv bench`; another plugged in by whoever runs it. */
  readonly protocol: BenchProtocol;
  readonly connections: number;
  /** Commands per batch: each connection writes P commands at once and waits for all P replies. */
  readonly pipeline: number;
  readonly keyspace: number;
  /** The key numbers to use instead of 0..keyspace-1 (the keys of one shard of a ring). */
  readonly keys?: Float64Array;
  readonly valueSize: number;
  /** Fraction of GETs among the requests (0.9 for --ratio 9:1). */
  readonly getFraction: number;
  /** A batch unanswered this long aborts the run; also the connect time-out. */
  readonly timeoutMs: number;
  /** Sent first on each connection, before any load (the line protocol's AUTH); its one reply line must be OK. */
  readonly auth?: Uint8Array;
  /** Connect over TLS with these. */
  readonly tls?: StoreTlsConnectOptions;
}

export interface PhaseResult {
  readonly requests: number;
  readonly gets: number;
  readonly sets: number;
  readonly misses: number;
  readonly errors: number;
  readonly wrong: number;
  /** Wall-clock ms (performance.timeOrigin based, comparable across worker threads). */
  readonly startedAt: number;
  readonly endedAt: number;
  readonly histogram: LatencyHistogram | undefined;
}

/** Depth of the SET batches that fill the keyspace before measuring. */
export const PREFILL_DEPTH = 64;

interface Phase {
  readonly prefill: boolean;
  readonly record: boolean;
  budget: number;
  nextKey: number;
  stop: boolean;
  idle: number;
  gets: number;
  sets: number;
  readonly startedAt: number;
  lastReplyAt: number;
  readonly histogram: LatencyHistogram | undefined;
  readonly resolve: (r: PhaseResult) => void;
  readonly reject: (err: Error) => void;
}

class BenchConnection {
  readonly socket: Socket;
  readonly scanner: ReplyScanner;
  readonly expect: Uint8Array;
  inFlight = 0;
  sentAt = 0;

  constructor(socket: Socket, scanner: ReplyScanner, maxDepth: number) {
    this.socket = socket;
    this.scanner = scanner;
    this.expect = new Uint8Array(maxDepth);
    scanner.expect = this.expect;
  }
}

/**
 * The load generator of `kv bench`: C connections, each with one batch of P
 * pre-encoded commands in flight, written in one write; replies are counted by a
 * byte scanner, and every reply in a chunk is recorded with that chunk's arrival time
 * minus its batch's send time. No promise per request: the hot loop is one `data`
 * handler per connection.
 */
export class LoadGenerator {
  readonly options: LoadOptions;
  /** Replies received in the current phase (read by the progress bar). */
  completed = 0;
  /** Where a worker thread publishes `completed` for the main thread's progress bar. */
  progressCell: Float64Array | undefined;
  progressIndex = 0;

  readonly #encoder: CommandEncoder;
  readonly #conns: BenchConnection[] = [];
  #phase: Phase | undefined;
  #failure: Error | undefined;
  #watchdog: NodeJS.Timeout | undefined;

  constructor(options: LoadOptions) {
    this.options = options;
    this.#encoder = options.protocol.createEncoder(options.valueSize);
  }

  /** Opens every connection; rejects with a readable message when the server cannot be reached. */
  async connect(): Promise<void> {
    const { host, port, connections, protocol, valueSize, timeoutMs, pipeline, auth, tls } = this.options;
    const opened = Array.from({ length: connections }, () => {
      const socket = tls
        ? tlsModule().connect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...tls }).setNoDelay(true)
        : connect({ host, port, noDelay: true });
      const conn = new BenchConnection(socket, protocol.createScanner(valueSize), Math.max(pipeline, PREFILL_DEPTH));
      this.#conns.push(conn);
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => socket.destroy(new Error(`connect timed out after ${timeoutMs} ms`)), timeoutMs);
        const ready = (): void => {
          clearTimeout(timer);
          socket.on('data', (chunk: Buffer) => this.#onData(conn, chunk));
          resolve();
        };
        socket.once(tls ? 'secureConnect' : 'connect', () => {
          if (auth === undefined) return ready();
          // AUTH first; its reply, one line, is read here and never reaches the load's scanner.
          let reply = '';
          const onReply = (chunk: Buffer): void => {
            reply += chunk.toString('latin1');
            const eol = reply.indexOf('\n');
            if (eol === -1) return;
            socket.off('data', onReply);
            const line = reply.slice(0, eol).replace(/\r$/, '');
            // A store without a password says so and serves: as the client library, carry on.
            const answer = decodeReply(line);
            if (answer.kind !== 'ok' && !(answer.kind === 'error' && answer.reason === ERROR_REASONS.authenticationNotEnabled)) {
              clearTimeout(timer);
              reject(new Error(`the store at ${host}:${port} refused AUTH: ${line}`));
              socket.destroy();
              return;
            }
            ready();
          };
          socket.on('data', onReply);
          socket.write(auth);
        });
        socket.on('error', (err) => {
          clearTimeout(timer);
          reject(new Error(`cannot connect to ${host}:${port}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
          this.#fail(new Error(`connection to ${host}:${port} failed: ${err.message}`));
        });
        socket.on('close', () => {
          clearTimeout(timer);
          this.#fail(new Error(`the server at ${host}:${port} closed a connection during the run`));
        });
      });
    });
    try {
      await Promise.all(opened);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** SETs every key of the keyspace once (batches of PREFILL_DEPTH, all connections). */
  prefill(): Promise<PhaseResult> {
    return this.#run(true, false, this.options.keys?.length ?? this.options.keyspace);
  }

  /**
   * Random GET/SET traffic for `requests` requests or `seconds` seconds, whichever is
   * given; latencies are recorded when `record` is set (not during warm-up).
   */
  load({ requests, seconds, record }: { requests?: number; seconds?: number; record: boolean }): Promise<PhaseResult> {
    const phase = this.#run(false, record, requests ?? Infinity);
    if (seconds !== undefined) {
      const timer = setTimeout(() => {
        if (this.#phase) this.#phase.stop = true;
      }, seconds * 1000);
      phase.finally(() => clearTimeout(timer)).catch(() => {});
    }
    return phase;
  }

  close(): void {
    clearInterval(this.#watchdog);
    for (const c of this.#conns) c.socket.destroy();
  }

  #run(prefill: boolean, record: boolean, budget: number): Promise<PhaseResult> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#phase) return Promise.reject(new Error('a phase is already running'));
    this.completed = 0;
    for (const c of this.#conns) {
      c.scanner.misses = c.scanner.errors = c.scanner.wrong = 0;
    }
    return new Promise<PhaseResult>((resolve, reject) => {
      const now = performance.now();
      const phase: Phase = {
        prefill, record, budget, nextKey: 0, stop: false, idle: 0, gets: 0, sets: 0,
        startedAt: now, lastReplyAt: now,
        histogram: record ? new LatencyHistogram() : undefined,
        resolve, reject,
      };
      this.#phase = phase;
      this.#watchdog = setInterval(() => this.#checkStalls(), Math.max(10, this.options.timeoutMs / 4));
      for (const c of this.#conns) {
        if (this.#phase !== phase) break;
        if (!this.#issue(c, phase)) phase.idle++;
      }
      if (this.#phase === phase && phase.idle === this.#conns.length) this.#finish(phase);
    });
  }

  /** Writes the next batch on `c`; false when the phase has nothing more to send. */
  #issue(c: BenchConnection, phase: Phase): boolean {
    if (phase.stop) return false;
    const enc = this.#encoder;
    const expect = c.expect;
    let take: number;
    let bytes: number;
    let buf: Buffer;
    if (phase.prefill) {
      const keys = this.options.keys;
      take = Math.min(PREFILL_DEPTH, (keys ? keys.length : this.options.keyspace) - phase.nextKey);
      if (take <= 0) return false;
      buf = Buffer.allocUnsafe(take * enc.setLength);
      let off = 0;
      for (let i = 0; i < take; i++) {
        expect[i] = EXPECT_SET;
        const n = phase.nextKey++;
        off = enc.writeSet(buf, off, keys ? keys[n]! : n);
      }
      phase.sets += take;
    } else {
      take = Math.min(this.options.pipeline, phase.budget);
      if (take <= 0) return false;
      phase.budget -= take;
      const getFraction = this.options.getFraction;
      let gets = 0;
      for (let i = 0; i < take; i++) {
        if (Math.random() < getFraction) {
          expect[i] = EXPECT_GET;
          gets++;
        } else {
          expect[i] = EXPECT_SET;
        }
      }
      bytes = gets * enc.getLength + (take - gets) * enc.setLength;
      buf = Buffer.allocUnsafe(bytes);
      const keys = this.options.keys;
      const keyspace = keys ? keys.length : this.options.keyspace;
      let off = 0;
      for (let i = 0; i < take; i++) {
        const r = Math.floor(Math.random() * keyspace);
        const k = keys ? keys[r]! : r;
        off = expect[i] === EXPECT_GET ? enc.writeGet(buf, off, k) : enc.writeSet(buf, off, k);
      }
      phase.gets += gets;
      phase.sets += take - gets;
    }
    c.scanner.index = 0;
    c.inFlight = take;
    c.sentAt = performance.now();
    c.socket.write(buf);
    return true;
  }

  #onData(c: BenchConnection, chunk: Buffer): void {
    const now = performance.now();
    const phase = this.#phase;
    const done = c.scanner.feed(chunk);
    if (!phase || done > c.inFlight || c.scanner.broken) {
      this.#fail(new Error(c.scanner.broken ? 'the server sent a reply the benchmark cannot parse' : 'the server sent more replies than requests'));
      return;
    }
    if (done === 0) return;
    c.inFlight -= done;
    this.completed += done;
    if (this.progressCell) this.progressCell[this.progressIndex] = this.completed;
    phase.lastReplyAt = now;
    if (phase.histogram) phase.histogram.recordMs(now - c.sentAt, done);
    if (c.inFlight === 0 && !this.#issue(c, phase) && ++phase.idle === this.#conns.length) this.#finish(phase);
  }

  #finish(phase: Phase): void {
    clearInterval(this.#watchdog);
    this.#phase = undefined;
    let misses = 0;
    let errors = 0;
    let wrong = 0;
    for (const c of this.#conns) {
      misses += c.scanner.misses;
      errors += c.scanner.errors;
      wrong += c.scanner.wrong;
    }
    const origin = performance.timeOrigin;
    phase.resolve({
      requests: phase.gets + phase.sets,
      gets: phase.gets,
      sets: phase.sets,
      misses,
      errors,
      wrong,
      startedAt: origin + phase.startedAt,
      endedAt: origin + phase.lastReplyAt,
      histogram: phase.histogram,
    });
  }

  #checkStalls(): void {
    const now = performance.now();
    for (const c of this.#conns) {
      if (c.inFlight > 0 && now - c.sentAt > this.options.timeoutMs) {
        this.#fail(new Error(`no reply from ${this.options.host}:${this.options.port} within ${this.options.timeoutMs} ms`));
        return;
      }
    }
  }

  #fail(err: Error): void {
    if (this.#failure) return;
    this.#failure = err;
    const phase = this.#phase;
    this.#phase = undefined;
    this.close();
    phase?.reject(err);
  }
}
