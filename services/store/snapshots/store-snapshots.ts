import { isValidKeyBytes } from '../../protocol/key-rules.ts';
import type { Logger } from '../../shared/logger.ts';
import { setImmediate } from 'node:timers/promises';
import type { KvEngine, SnapshotWalk } from '../engine/kv-engine.ts';
import { ChunkPool, sizeHintOf, SnapshotDecoder, SnapshotEncoder, SnapshotFormatError, TRAILER_BYTES } from './snapshot-format.ts';
import { nodeFileSystem, readSnapshotFile, setAside, SnapshotFileWriter, type SnapshotFileSystem } from './snapshot-file.ts';
import type { SnapshotMetrics } from './snapshot-metrics.ts';

// Loading the store's snapshot at start-up and writing it at shutdown (SPEC §7). Expiry
// travels as wall-clock time: the engine's clock is monotonic and starts anew with each
// process.

export interface SnapshotContext {
  readonly path: string;
  readonly logger: Logger;
  readonly metrics: SnapshotMetrics;
  /** Wall clock in unix ms (Date.now by default). */
  readonly wallNow?: () => number;
  readonly fs?: SnapshotFileSystem;
}

export interface LoadOutcome {
  /** The engine to serve from: the loaded one, or a fresh one when the file was bad. */
  readonly engine: KvEngine;
  readonly status: 'loaded' | 'missing' | 'set_aside';
  readonly keys: number;
}

/** The file the store cannot use; the store then starts empty or, when required, exits. */
export class SnapshotLoadError extends Error {
  override name = 'SnapshotLoadError';
}

/** Bytes the save keeps queued for the disk before it waits for the writes. */
const SAVE_QUEUE_BYTES = 16 << 20;

/**
 * Loads `path` into the engine `createEngine` makes. Keys are inserted in file order
 * (least recently used first), so a smaller cap or key limit keeps the most recent ones;
 * expired keys are dropped, and so are values over `maxValueBytes`. A truncated,
 * corrupted or unknown-version file is renamed aside and a fresh engine returned, or,
 * when `required`, a SnapshotLoadError is thrown.
 */
export async function loadSnapshot(
  ctx: SnapshotContext,
  createEngine: () => KvEngine,
  options: { readonly required: boolean; readonly maxValueBytes: number },
): Promise<LoadOutcome> {
  const { path, logger, metrics } = ctx;
  const wallNow = ctx.wallNow ?? Date.now;
  const fs = ctx.fs ?? nodeFileSystem;
  const started = performance.now();
  const engine = createEngine();
  const now = wallNow();
  let records = 0;
  let expired = 0;
  let tooLarge = 0;
  let refused = 0;
  const decoder = new SnapshotDecoder((src, ks, ke, vs, ve, expiresAtMs) => {
    if (!isValidKeyBytes(src, ks, ke)) throw new SnapshotFormatError('corrupt', 'a key that breaks the key rules');
    if (ve - vs > options.maxValueBytes) {
      tooLarge++;
      return;
    }
    let ttlMs: number | undefined;
    if (expiresAtMs !== 0) {
      ttlMs = expiresAtMs - now;
      if (ttlMs <= 0) {
        expired++;
        return;
      }
    }
    if (engine.restoreAt(src, ks, ke, vs, ve, ttlMs) === 'ok') records++;
    else refused++; // noeviction and full: the rest of the file cannot fit either way
  });
  let found: boolean;
  try {
    // The trailer's record count sizes the engine's tables up front: no rehash while loading.
    const peek = {
      bytes: TRAILER_BYTES,
      seen: (fileBytes: number, tail: Buffer) => {
        const hint = sizeHintOf(fileBytes, tail);
        if (hint !== undefined) engine.reserve(hint.records, hint.recordBytes);
      },
    };
    found = await readSnapshotFile(path, (chunk) => decoder.push(chunk), fs, peek);
    if (found) decoder.end();
    engine.endReserve();
  } catch (err) {
    metrics.failed();
    const reason = err instanceof SnapshotFormatError ? err.reason : ((err as NodeJS.ErrnoException).code ?? 'error');
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof SnapshotFormatError) {
      const aside = await setAside(path, wallNow(), fs);
      logger.error({ path, reason, error: message, aside, required: options.required }, 'snapshot unusable: renamed aside');
    } else {
      logger.error({ path, reason, error: message, required: options.required }, 'snapshot unreadable');
    }
    if (options.required) throw new SnapshotLoadError(`snapshot ${path} is unusable (${reason}: ${message}) and STORE_SNAPSHOT_REQUIRED=true`);
    return { engine: createEngine(), status: 'set_aside', keys: 0 };
  }
  if (!found) {
    logger.info({ path }, 'no snapshot to load: starting empty');
    return { engine, status: 'missing', keys: 0 };
  }
  // Keys held, not records applied: a file holding a key twice, or a load that evicts, applies more.
  const keys = engine.keyCount;
  metrics.loaded(keys);
  logger.info(
    { path, keys, records, expiredDropped: expired, tooLargeDropped: tooLarge, refusedFull: refused, evictions: engine.evictions, ms: Math.round(performance.now() - started) },
    'snapshot loaded',
  );
  return { engine, status: 'loaded', keys };
}

export interface SaveOutcome {
  readonly keys: number;
  readonly bytes: number;
  readonly seconds: number;
}

export interface SaveOptions {
  /**
   * While serving: work in slices of about this many ms, yielding to the event loop
   * between them, so clients wait at most a slice. Unset (the shutdown save): no yielding.
   */
  readonly sliceMs?: number;
  /** Abandons the save (the previous snapshot stays); the promise then resolves undefined. */
  readonly signal?: AbortSignal;
  /** Where the encoder's chunks come from and go back to; periodic saves share one. */
  readonly chunks?: ChunkPool;
}

/** Keys handed over per walk step; a slice runs steps until its time is up. */
const STEP_KEYS = 256;

/**
 * Writes the engine's keyspace as of now to `path` (temporary file, fsync, rename), as a
 * point-in-time image even while commands run between its slices (the engine's
 * copy-on-write walk). On failure the previous snapshot stays, the failure is counted
 * and logged, and the error is rethrown.
 */
export async function saveSnapshot(ctx: SnapshotContext, engine: KvEngine, options: SaveOptions = {}): Promise<SaveOutcome | undefined> {
  const { path, logger, metrics } = ctx;
  const { sliceMs, signal, chunks } = options;
  const wallNow = ctx.wallNow ?? Date.now;
  const started = performance.now();
  let writer: SnapshotFileWriter | undefined;
  let walk: SnapshotWalk | undefined;
  try {
    // The walk begins before the first await, so the point in time is this call, not the
    // moment the file opens: chunks made meanwhile (commands preserving records) wait here.
    const early: Buffer[] = [];
    const startedAtMs = wallNow();
    const recycle = (chunk: Buffer): void => encoder.recycle(chunk);
    const encoder = new SnapshotEncoder((chunk) => (writer === undefined ? early.push(chunk) : writer.write(chunk, recycle)), startedAtMs, chunks);
    // Expiry goes to wall-clock time through the pair of clocks read at the point in time.
    const toWall = (expiresAt: number): number => (expiresAt === 0 ? 0 : startedAtMs + (expiresAt - walk!.startedAt));
    walk = engine.beginSnapshot((src, ks, ke, vs, ve, expiresAt) => encoder.record(src, ks, ke, vs, ve, toWall(expiresAt)));
    const w = await SnapshotFileWriter.create(path, ctx.fs ?? nodeFileSystem);
    writer = w;
    for (const chunk of early.splice(0)) w.write(chunk, recycle);
    let more = true;
    while (more) {
      const sliceEnd = sliceMs === undefined ? Infinity : performance.now() + sliceMs;
      do more = walk.step(STEP_KEYS);
      while (more && performance.now() < sliceEnd && w.queuedBytes <= SAVE_QUEUE_BYTES);
      if (w.queuedBytes > SAVE_QUEUE_BYTES) await w.drained();
      else if (sliceMs !== undefined && more) await setImmediate();
      if (signal?.aborted) {
        walk.end();
        await w.abort();
        logger.info({ path }, 'snapshot abandoned: the previous one stays');
        return undefined;
      }
    }
    walk.end();
    encoder.finish();
    await w.commit();
    const seconds = (performance.now() - started) / 1000;
    metrics.saved(seconds, encoder.bytes, wallNow());
    logger.info({ path, keys: encoder.records, bytes: encoder.bytes, ms: Math.round(seconds * 1000) }, 'snapshot saved');
    return { keys: encoder.records, bytes: encoder.bytes, seconds };
  } catch (err) {
    walk?.end();
    await writer?.abort();
    metrics.failed();
    const error = err instanceof Error ? err.message : String(err);
    logger.error({ path, error, code: (err as NodeJS.ErrnoException).code }, 'snapshot failed: the previous one stays');
    throw err;
  }
}

/**
 * Periodic snapshots while serving (STORE_SNAPSHOT_INTERVAL_S): one every interval,
 * never two at once; a failed one is logged and counted (by saveSnapshot) and the next
 * interval tries again.
 */
export class PeriodicSnapshots {
  readonly #ctx: SnapshotContext;
  readonly #engine: KvEngine;
  readonly #intervalMs: number;
  readonly #sliceMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #abort = new AbortController();
  /** One save's worth of chunks, kept from save to save. */
  readonly #chunks = new ChunkPool();

  constructor(ctx: SnapshotContext, engine: KvEngine, intervalMs: number, sliceMs: number) {
    this.#ctx = ctx;
    this.#engine = engine;
    this.#intervalMs = intervalMs;
    this.#sliceMs = sliceMs;
  }

  start(): void {
    this.#timer = setInterval(() => void this.runNow(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Starts a snapshot unless one is under way; resolves when it is done (or failed). */
  runNow(): Promise<unknown> {
    this.#running ??= saveSnapshot(this.#ctx, this.#engine, { sliceMs: this.#sliceMs, signal: this.#abort.signal, chunks: this.#chunks })
      .catch(() => undefined) // logged and counted by saveSnapshot
      .finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** Stops the timer and abandons the snapshot under way (the shutdown one follows). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#abort.abort();
    await this.#running;
  }
}
