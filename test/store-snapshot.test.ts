import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { nodeFileSystem, type SnapshotFileSystem } from '../services/store/snapshots/snapshot-file.ts';
import { SnapshotDecoder, SnapshotEncoder } from '../services/store/snapshots/snapshot-format.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { parseExposition, sampleValue } from '../bench/harness/exposition.ts';
import { startServiceProcess, storeScript } from './helpers/service-process.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { LineClient } from './helpers/line-client.ts';
import { b64 } from './helpers/base64.ts';
import { STORE_READY } from '../services/shared/ready-line.ts';

const dir = mkdtempSync(join(tmpdir(), 'kvstack-snapshot-'));
let n = 0;
const freshPath = (): string => join(dir, `snap-${++n}.kvs`);

afterEach(destroyAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A wall clock the test moves by hand. */
function wallClock(start = 1_800_000_000_000) {
  const clock = { ms: start, now: () => clock.ms };
  return clock;
}

async function metric(store: TestStore, name: string): Promise<number | undefined> {
  return sampleValue(parseExposition((await store.admin('/metrics')).body), name);
}

/** Values across the arena's size classes, a large record, empty and binary values. */
function entries(): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  m.set('empty', Buffer.alloc(0));
  m.set('binary', Buffer.from([0, 1, 2, 0x0d, 0x20, 0x7f, 0x80, 0xff]));
  m.set('ключ-鍵', Buffer.from('ünïcödé'));
  m.set('k'.repeat(250), Buffer.from('longest key'));
  for (let size = 1; size <= 2 * 1024 * 1024; size = Math.ceil(size * 2.7)) m.set(`size-${size}`, Buffer.alloc(size, size & 0x7f));
  return m;
}

/** The node file system, with every write to a file opened for writing seen first by `before` (which may throw, as a full disk). */
function withWriteHook(before: (buf: Uint8Array, length: number) => void): SnapshotFileSystem {
  return {
    ...nodeFileSystem,
    async open(p, flags) {
      const handle = await nodeFileSystem.open(p, flags);
      if (flags !== 'w') return handle;
      return {
        read: handle.read.bind(handle),
        sync: handle.sync.bind(handle),
        close: handle.close.bind(handle),
        async write(buf, offset = 0, length = buf.length - offset, position = null) {
          before(buf, length);
          return handle.write(buf, offset, length, position);
        },
      };
    },
  };
}
describe('snapshots: save at shutdown, load at start-up', () => {
  it('a clean stop brings back every key byte for byte, with its remaining time to live', async () => {
    const path = freshPath();
    const wall = wallClock();
    const config = { snapshotPath: path, maxValueBytes: 4 * 1024 * 1024 };
    const first = await startTestStore(config, { wallNow: wall.now });
    const data = entries();
    for (const [k, v] of data) expect(first.service.engine.setBytes(k, v, 0, v.length)).toBe('ok');
    first.service.engine.setBytes('ttl-100', Buffer.from('soon'), 0, 4, 100);
    first.service.engine.setBytes('ttl-5', Buffer.from('sooner'), 0, 6, 5);
    await first.service.close();
    expect(existsSync(path)).toBe(true);
    expect(first.logs.find((l) => l.msg === 'snapshot saved')).toMatchObject({ keys: data.size + 2 });

    wall.ms += 10_000; // ten seconds of downtime: ttl-5 has expired, ttl-100 has 90 s left
    const second = await startTestStore(config, { wallNow: wall.now });
    const engine = second.service.engine;
    for (const [k, v] of data) expect(engine.get(k), k).toBe(b64(v));
    expect(engine.get('ttl-100')).toBe(b64(Buffer.from('soon')));
    expect(engine.ttl('ttl-100')).toBe(90);
    expect(engine.get('ttl-5')).toBeUndefined();
    expect(engine.keyCount).toBe(data.size + 1);
    expect(second.logs.find((l) => l.msg === 'snapshot loaded')).toMatchObject({ keys: data.size + 1, expiredDropped: 1 });
    expect(await metric(second, 'kvstore_snapshot_loaded_keys')).toBe(data.size + 1);
    // Interval 0: once serving, the loaded file is gone, so a crash means a cold cache.
    expect(existsSync(path)).toBe(false);
    const c = await second.client();
    expect(await c.request('GET binary')).toBe(`VALUE ${b64(Buffer.from([0, 1, 2, 0x0d, 0x20, 0x7f, 0x80, 0xff]))}`);
  });

  it('a smaller cap on load keeps the most recently used keys', async () => {
    const path = freshPath();
    const first = await startTestStore({ snapshotPath: path });
    const value = Buffer.alloc(1000, 0x61);
    for (let i = 0; i < 100; i++) first.service.engine.setBytes(`key-${i}`, value, 0, value.length);
    // Reading the ten oldest makes them the most recent.
    for (let i = 0; i < 10; i++) expect(first.service.engine.get(`key-${i}`)).toBeDefined();
    await first.service.close();

    const second = await startTestStore({ snapshotPath: path, maxMemoryBytes: 30 * 1006 });
    const engine = second.service.engine;
    const kept = Array.from({ length: 100 }, (_, i) => i).filter((i) => engine.get(`key-${i}`) !== undefined);
    expect(kept.length).toBe(30);
    // The ten read last, then the twenty written last.
    expect(kept).toEqual([...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 20 }, (_, i) => 80 + i)]);
  });

  it('a file holding a key twice (made by another tool) loads it once, the later record winning', async () => {
    const path = freshPath();
    const chunks: Buffer[] = [];
    const encoder = new SnapshotEncoder((c) => chunks.push(c), Date.now());
    const put = (key: string, value: string) => {
      const src = Buffer.from(key + value);
      encoder.record(src, 0, key.length, key.length, src.length, 0);
    };
    for (let i = 0; i < 3000; i++) put(`key-${i}`, `first-${i}`);
    for (let i = 0; i < 3000; i += 3) put(`key-${i}`, `second-${i}`.repeat(1 + (i % 4))); // same and other size classes
    encoder.finish();
    writeFileSync(path, Buffer.concat(chunks));
    const store = await startTestStore({ snapshotPath: path });
    const engine = store.service.engine;
    engine.verifyInvariants();
    expect(engine.keyCount).toBe(3000);
    for (let i = 0; i < 3000; i++) {
      const want = i % 3 === 0 ? `second-${i}`.repeat(1 + (i % 4)) : `first-${i}`;
      expect(engine.get(`key-${i}`), `key-${i}`).toBe(b64(Buffer.from(want)));
    }
    expect(store.logs.find((l) => l.msg === 'snapshot loaded')).toMatchObject({ keys: 3000, records: 4000 });
  });

  it('a missing file is a first start', async () => {
    const path = freshPath();
    const store = await startTestStore({ snapshotPath: path });
    expect(store.service.engine.keyCount).toBe(0);
    expect(store.logs.some((l) => l.msg === 'no snapshot to load: starting empty')).toBe(true);
  });

  it('a truncated or corrupted file is renamed aside and the store starts empty; required, it refuses to start', async () => {
    const path = freshPath();
    const first = await startTestStore({ snapshotPath: path });
    for (let i = 0; i < 50; i++) first.service.engine.setBytes(`key-${i}`, Buffer.from('value'), 0, 5);
    await first.service.close();
    const good = readFileSync(path);

    for (const [name, bad] of [
      ['truncated', good.subarray(0, good.length - 20)],
      ['checksum', Buffer.from(good).fill(0x7a, 200, 201)],
      ['version', Buffer.concat([good.subarray(0, 8), Buffer.from([9, 0, 0, 0]), good.subarray(12)])],
    ] as const) {
      writeFileSync(path, bad);
      const before = new Set(readdirSync(dir));
      const store = await startTestStore({ snapshotPath: path });
      expect(store.service.engine.keyCount, name).toBe(0);
      const logged = store.logs.find((l) => l.msg === 'snapshot unusable: renamed aside');
      expect(logged, name).toMatchObject({ path, reason: name });
      const aside = readdirSync(dir).filter((f) => !before.has(f));
      expect(aside).toHaveLength(1);
      expect(aside[0]).toMatch(/\.corrupt-\d+$/);
      expect(readFileSync(join(dir, aside[0]!)).equals(bad)).toBe(true);
      rmSync(join(dir, aside[0]!));
      expect(await metric(store, 'kvstore_snapshot_failures_total')).toBe(1);
      store.service.destroy();
    }

    writeFileSync(path, good.subarray(0, 100));
    await expect(startTestStore({ snapshotPath: path, snapshotRequired: true })).rejects.toThrow(/STORE_SNAPSHOT_REQUIRED=true/);
  });

  it('a failed write (disk full) keeps the previous snapshot and is counted', async () => {
    const path = freshPath();
    const first = await startTestStore({ snapshotPath: path });
    first.service.engine.setBytes('old', Buffer.from('kept'), 0, 4);
    await first.service.close();
    const previous = readFileSync(path);

    // Loads the previous file, then the disk fills up 64 KiB into the next save.
    let budget = 64 * 1024;
    const fullDisk = withWriteHook((_buf, length) => {
      if (length > budget) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      budget -= length;
    });
    const second = await startTestStore({ snapshotPath: path, snapshotIntervalS: 3600 }, { snapshotFs: fullDisk });
    const big = Buffer.alloc(100_000, 0x62);
    for (let i = 0; i < 20; i++) second.service.engine.setBytes(`big-${i}`, big, 0, big.length);
    await expect(second.service.close()).rejects.toThrow(/ENOSPC/);
    expect(second.logs.find((l) => l.msg === 'snapshot failed: the previous one stays')).toMatchObject({ code: 'ENOSPC' });
    expect(readFileSync(path).equals(previous)).toBe(true);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });
});

describe('snapshots across real process restarts', () => {
  it('SIGTERM saves, the next start serves the data; SIGKILL after a load finds no stale file', async () => {
    const path = freshPath();
    const env = { STORE_PORT: '0', STORE_METRICS_PORT: '0', STORE_SNAPSHOT_PATH: path };
    const first = await startServiceProcess(storeScript, env, STORE_READY);
    const port = (first.logs.find((l) => l.msg === STORE_READY)!.port as number);
    const c = await LineClient.connect(port);
    const lines = Array.from({ length: 200 }, (_, i) => `SETEX key-${i} 3600 value ${i} with spaces`);
    c.socket.write(lines.join('\n') + '\nSET plain  leading space\n');
    expect(await c.lines(201)).toEqual(Array(201).fill('OK'));
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(first.logs.find((l) => l.msg === 'snapshot saved')).toMatchObject({ keys: 201 });

    const second = await startServiceProcess(storeScript, env, STORE_READY);
    const port2 = second.logs.find((l) => l.msg === STORE_READY)!.port as number;
    const c2 = await LineClient.connect(port2);
    expect(await c2.request('GET key-199')).toBe(`VALUE ${b64(Buffer.from('value 199 with spaces'))}`);
    expect(await c2.request('GET plain')).toBe(`VALUE ${b64(Buffer.from(' leading space'))}`);
    expect(await c2.request('TTL key-0')).toMatch(/^TTL (3600|359\d)$/);
    // A crash now: the file it loaded was consumed, so nothing stale can come back.
    expect(await second.stop('SIGKILL')).toBe(null);
    const third = await startServiceProcess(storeScript, env, STORE_READY);
    expect(third.logs.some((l) => l.msg === 'no snapshot to load: starting empty')).toBe(true);
    await third.stop('SIGTERM');
  });
});

describe('periodic snapshots while serving', () => {
  /** Every record of a snapshot file: key → value (base64). */
  const recordsOf = (file: Buffer): Map<string, string> => {
    const out = new Map<string, string>();
    const decoder = new SnapshotDecoder((src, ks, ke, vs, ve) => out.set(src.toString('utf8', ks, ke), src.toString('base64', vs, ve)));
    decoder.push(file);
    decoder.end();
    return out;
  };

  it('is the keyspace of its start, while overwrites, deletes and new keys race it', async () => {
    const path = freshPath();
    const store = await startTestStore({ snapshotPath: path, snapshotIntervalS: 3600 });
    const engine = store.service.engine;
    const value = Buffer.alloc(100, 0x61);
    for (let i = 0; i < 50_000; i++) engine.setBytes(`key-${i}`, value, 0, value.length);
    const atStart = new Map(Array.from({ length: 50_000 }, (_, i) => [`key-${i}`, value.toString('base64')]));

    const c = await store.client();
    const racing = Array.from({ length: 3000 }, (_, i) =>
      i % 3 === 0 ? `SET key-${i * 16} changed ${i}` : i % 3 === 1 ? `DELETE key-${i * 16}` : `SET new-${i} fresh`,
    );
    const saved = store.service.periodicSnapshots!.runNow();
    // The point in time is the call, not the moment the file opens: a change made right
    // after it, before any await, is not in the snapshot.
    expect(engine.delete('key-1')).toBe(true);
    engine.setBytes('key-2', Buffer.from('later'), 0, 5);
    c.socket.write(racing.join('\n') + '\n');
    let repliesBeforeDone = -1;
    void saved.then(() => (repliesBeforeDone = c.received.length));
    expect(await c.lines(racing.length)).toEqual(Array(racing.length).fill('OK'));
    await saved;
    // The save yielded to the clients between its slices: commands ran while it was under way.
    expect(repliesBeforeDone).toBeGreaterThan(0);
    expect(store.logs.find((l) => l.msg === 'snapshot saved')).toMatchObject({ keys: 50_000 });
    expect(recordsOf(readFileSync(path))).toEqual(atStart);
    // With an interval the file is kept once loaded: a crash brings back the last one.
    expect(existsSync(path)).toBe(true);
    expect(await metric(store, 'kvstore_snapshot_interval_seconds')).toBe(3600);
    expect(await metric(store, 'kvstore_snapshot_size_bytes')).toBe(readFileSync(path).length);
  });

  it('reuses its chunk buffers once written, instead of allocating one per chunk', async () => {
    const path = freshPath();
    const written: Uint8Array[] = [];
    const recording = withWriteHook((buf) => void written.push(buf));
    const store = await startTestStore({ snapshotPath: path, snapshotIntervalS: 3600 }, { snapshotFs: recording });
    const value = Buffer.alloc(200, 0x63);
    // About 45 MiB: more than the save queues before it waits for the disk.
    for (let i = 0; i < 200_000; i++) store.service.engine.setBytes(`key-${i}`, value, 0, value.length);
    await store.service.periodicSnapshots!.runNow();
    expect(store.logs.find((l) => l.msg === 'snapshot saved')).toMatchObject({ keys: 200_000 });
    const buffers = new Set(written.map((b) => b.buffer));
    expect(written.length).toBeGreaterThan(40);
    expect(buffers.size).toBeLessThan(written.length / 2);
  });

  it('a store killed at any moment leaves a snapshot file that loads whole', async () => {
    const path = freshPath();
    const env = { STORE_PORT: '0', STORE_METRICS_PORT: '0', STORE_SNAPSHOT_PATH: path, STORE_SNAPSHOT_INTERVAL_S: '1' };
    for (let round = 0; round < 3; round++) {
      const store = await startServiceProcess(storeScript, env, STORE_READY);
      const port = store.logs.find((l) => l.msg === STORE_READY)!.port as number;
      const c = await LineClient.connect(port);
      const lines = Array.from({ length: 20_000 }, (_, i) => `SET r${round}-${i} ${'v'.repeat(i % 300)}`);
      c.socket.write(lines.join('\n') + '\n');
      await c.lines(lines.length);
      // The second save finished after the writes were answered began after them: it holds them.
      const saves = () => store.logs.filter((l) => l.msg === 'snapshot saved').length;
      const before = saves();
      await waitUntil('two periodic snapshots', async () => (saves() >= before + 2 ? true : undefined), { deadlineMs: 20_000, everyMs: 50 });
      // Then SIGKILL at a random moment of the next save or the wait for it.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 1200)));
      expect(await store.stop('SIGKILL')).toBe(null);
      // Whatever the moment, the file is a whole snapshot holding every round so far.
      const keys = recordsOf(readFileSync(path));
      expect(keys.size).toBe((round + 1) * 20_000);
    }
  });
});
