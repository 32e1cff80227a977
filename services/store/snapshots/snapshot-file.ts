import { basename, dirname, join } from 'node:path';
import { fsPromises } from '../../shared/builtins.ts';

// Crash-safe snapshot files: a snapshot is written to `<path>.tmp` in the same directory,
// fsynced, renamed over `<path>`, and the directory is fsynced, so a crash at any moment
// leaves the old file or the new one, never a torn one. A failed write removes the
// temporary file and leaves the previous snapshot as it was.

/** The part of a file handle the snapshot code uses (node:fs/promises' FileHandle fits). */
export interface SnapshotFileHandle {
  write(buffer: Uint8Array, offset?: number, length?: number, position?: number | null): Promise<{ bytesWritten: number }>;
  read(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }>;
  sync(): Promise<void>;
  close(): Promise<void>;
  /** The file's size; without it a reader gets no size hint (its peek is not called). */
  stat?(): Promise<{ size: number }>;
}

/** The file-system calls the snapshot code makes; tests inject failures (a full disk) here. */
export interface SnapshotFileSystem {
  open(path: string, flags: string): Promise<SnapshotFileHandle>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string, options: { force: boolean }): Promise<void>;
}

export const nodeFileSystem: SnapshotFileSystem = {
  open: (path, flags) => fsPromises().open(path, flags),
  rename: (from, to) => fsPromises().rename(from, to),
  rm: (path, options) => fsPromises().rm(path, options),
};

export const temporaryPathOf = (path: string): string => join(dirname(path), `.${basename(path)}.tmp`);

/**
 * Writes one snapshot: chunks are queued with write() (the caller pauses while
 * `queuedBytes` is high, awaiting drained()), then commit() makes the file durable and
 * puts it in place, or abort() drops it. The first failed write fails commit() and
 * drained() too; nothing is renamed then.
 */
export class SnapshotFileWriter {
  readonly path: string;
  readonly temporaryPath: string;
  readonly #fs: SnapshotFileSystem;
  readonly #handle: SnapshotFileHandle;
  #queue: Promise<void> = Promise.resolve();
  #queuedBytes = 0;
  #written = 0;
  #error: unknown;
  #done = false;

  private constructor(path: string, handle: SnapshotFileHandle, fs: SnapshotFileSystem) {
    this.path = path;
    this.temporaryPath = temporaryPathOf(path);
    this.#handle = handle;
    this.#fs = fs;
  }

  static async create(path: string, fs: SnapshotFileSystem = nodeFileSystem): Promise<SnapshotFileWriter> {
    const handle = await fs.open(temporaryPathOf(path), 'w');
    return new SnapshotFileWriter(path, handle, fs);
  }

  /** Bytes queued but not yet written. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  get writtenBytes(): number {
    return this.#written;
  }

  /** The first write error, if any (later writes are skipped). */
  get failed(): boolean {
    return this.#error !== undefined;
  }

  /** Queues `chunk`; `written` is called with it once its bytes are on their way to disk (to reuse it). */
  write(chunk: Buffer, written?: (chunk: Buffer) => void): void {
    if (this.#done) throw new Error('snapshot writer already committed or aborted');
    this.#queuedBytes += chunk.length;
    this.#queue = this.#queue.then(async () => {
      this.#queuedBytes -= chunk.length;
      if (this.#error !== undefined) return;
      try {
        let at = 0;
        while (at < chunk.length) {
          const { bytesWritten } = await this.#handle.write(chunk, at, chunk.length - at, null);
          at += bytesWritten;
        }
        this.#written += chunk.length;
        written?.(chunk);
      } catch (err) {
        this.#error = err;
      }
    });
  }

  /** Resolves when every queued chunk is written; rejects with the first write error. */
  async drained(): Promise<void> {
    await this.#queue;
    if (this.#error !== undefined) throw this.#error;
  }

  /** fsync, close, rename over the path, fsync the directory. On failure the temporary file is removed. */
  async commit(): Promise<void> {
    this.#done = true;
    try {
      await this.drained();
      await this.#handle.sync();
      await this.#handle.close();
    } catch (err) {
      await this.#discard();
      throw err;
    }
    try {
      await this.#fs.rename(this.temporaryPath, this.path);
    } catch (err) {
      await this.#fs.rm(this.temporaryPath, { force: true }).catch(() => {});
      throw err;
    }
    await syncDirectory(this.#fs, dirname(this.path));
  }

  /** Drops the temporary file; the previous snapshot stays. Idempotent. */
  async abort(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    await this.#queue;
    await this.#discard();
  }

  async #discard(): Promise<void> {
    await this.#handle.close().catch(() => {});
    await this.#fs.rm(this.temporaryPath, { force: true }).catch(() => {});
  }
}

/** Makes a rename durable: fsync of the directory that holds the entry. */
async function syncDirectory(fs: SnapshotFileSystem, dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const READ_CHUNK_BYTES = 1 << 20;

/** Asks for the file's last `bytes` bytes before the first chunk (a load reads its record count there). */
export interface TailPeek {
  readonly bytes: number;
  seen(fileBytes: number, tail: Buffer): void;
}

/**
 * Feeds the file at `path` to `push` in chunks of up to READ_CHUNK_BYTES; a chunk's buffer
 * is reused once push returns. The next chunk is read while push works on one. Resolves
 * false when there is no such file. With `peek`, the file's size and last bytes go to it
 * first (when the file is that long).
 */
export async function readSnapshotFile(
  path: string,
  push: (chunk: Buffer) => void,
  fs: SnapshotFileSystem = nodeFileSystem,
  peek?: TailPeek,
): Promise<boolean> {
  let handle: SnapshotFileHandle;
  try {
    handle = await fs.open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  let reading: Promise<{ bytesRead: number }> | undefined;
  try {
    if (peek !== undefined && handle.stat !== undefined) {
      const { size } = await handle.stat();
      if (size >= peek.bytes) {
        const tail = Buffer.alloc(peek.bytes);
        const { bytesRead } = await handle.read(tail, 0, tail.length, size - tail.length);
        if (bytesRead === tail.length) peek.seen(size, tail);
      }
    }
    // Two buffers, taking turns: one being read into, one being parsed; nothing allocated per chunk.
    const buffers = [Buffer.allocUnsafe(READ_CHUNK_BYTES), Buffer.allocUnsafe(READ_CHUNK_BYTES)] as const;
    let turn = 0;
    reading = handle.read(buffers[0], 0, READ_CHUNK_BYTES, null);
    for (;;) {
      const { bytesRead } = await reading;
      reading = undefined;
      if (bytesRead === 0) return true;
      const chunk = buffers[turn]!.subarray(0, bytesRead);
      turn ^= 1;
      reading = handle.read(buffers[turn]!, 0, READ_CHUNK_BYTES, null);
      push(chunk);
    }
  } finally {
    // A push that threw leaves a read under way: it ends before the handle closes.
    await reading?.catch(() => {});
    await handle.close();
  }
}

/** Renames a bad snapshot aside, to `<path>.corrupt-<unix seconds>`, and returns the new path. */
export async function setAside(path: string, nowMs: number, fs: SnapshotFileSystem = nodeFileSystem): Promise<string> {
  const aside = `${path}.corrupt-${Math.floor(nowMs / 1000)}`;
  await fs.rename(path, aside);
  return aside;
}
