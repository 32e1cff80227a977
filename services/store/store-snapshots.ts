import { isValidKeyBytes } from '../protocol/key-rules.ts';
import type { Logger } from '../shared/logger.ts';
import type { KvEngine } from './kv-engine.ts';
import { SnapshotDecoder, SnapshotEncoder, SnapshotFormatError } from './snapshot-format.ts';
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

/** Keys per batch of the shutdown save; between batches the writer may catch up. */
const SAVE_BATCH_KEYS = 4096;
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
  let keys = 0;
  let expired = 0;
  let tooLarge = 0;
  let refused = 0;
  const decoder = new SnapshotDecoder((src, ks, ke, vs, ve, expiresAtMs) => {
    if (!isValidKeyBytes(src, ks, ke)) throw new SnapshotFormatError('corrupt', 'a key that breaks the key rules');
    if (ve - vs > options.maxValueBytes) {
      tooLarge++;
      return;
    }
    let ttlSeconds: number | undefined;
    if (expiresAtMs !== 0) {
      const remainingMs = expiresAtMs - now;
      if (remainingMs <= 0) {
        expired++;
        return;
      }
      ttlSeconds = remainingMs / 1000;
    }
    if (engine.setAt(src, ks, ke, vs, ve, ttlSeconds) === 'ok') keys++;
    else refused++; // noeviction and full: the rest of the file cannot fit either way
  });
  let found: boolean;
  try {
    found = await readSnapshotFile(path, (chunk) => decoder.push(chunk), fs);
    if (found) decoder.end();
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
  metrics.loaded(keys);
  logger.info(
    { path, keys, expiredDropped: expired, tooLargeDropped: tooLarge, refusedFull: refused, evictions: engine.evictions, ms: Math.round(performance.now() - started) },
    'snapshot loaded',
  );
  return { engine, status: 'loaded', keys };
}

export interface SaveOutcome {
  readonly keys: number;
  readonly bytes: number;
  readonly seconds: number;
}

/**
 * Writes every key of the engine to `path` (temporary file, fsync, rename). The keyspace
 * must not change meanwhile (the shutdown save runs after the last client left). On
 * failure the previous snapshot stays, the failure is counted and logged, and the error
 * is rethrown.
 */
export async function saveSnapshot(ctx: SnapshotContext, engine: KvEngine): Promise<SaveOutcome> {
  const { path, logger, metrics } = ctx;
  const wallNow = ctx.wallNow ?? Date.now;
  const started = performance.now();
  const startedAtMs = wallNow();
  let writer: SnapshotFileWriter | undefined;
  try {
    writer = await SnapshotFileWriter.create(path, ctx.fs ?? nodeFileSystem);
    const w = writer;
    const encoder = new SnapshotEncoder((chunk) => w.write(chunk), startedAtMs);
    const cursor = engine.entries();
    let more = true;
    while (more) {
      const wall = wallNow();
      more = cursor.next(SAVE_BATCH_KEYS, (src, ks, ke, vs, ve, ttlMs) => encoder.record(src, ks, ke, vs, ve, ttlMs === 0 ? 0 : wall + ttlMs));
      if (w.queuedBytes > SAVE_QUEUE_BYTES) await w.drained();
    }
    encoder.finish();
    await w.commit();
    const seconds = (performance.now() - started) / 1000;
    metrics.saved(seconds, encoder.bytes, wallNow());
    logger.info({ path, keys: encoder.records, bytes: encoder.bytes, ms: Math.round(seconds * 1000) }, 'snapshot saved');
    return { keys: encoder.records, bytes: encoder.bytes, seconds };
  } catch (err) {
    await writer?.abort();
    metrics.failed();
    const error = err instanceof Error ? err.message : String(err);
    logger.error({ path, error, code: (err as NodeJS.ErrnoException).code }, 'snapshot failed: the previous one stays');
    throw err;
  }
}
