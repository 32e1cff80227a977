import { bytesOf } from '../../services/shared/byte-views.ts';
import type { KvEngine } from '../../services/store/engine/kv-engine.ts';
import { ValueRange } from '../../services/store/engine/engine-api.ts';

/** The keys side by side in one buffer, a space apart, as a read of pipelined commands holds them: key i is buf[starts[i], ends[i]). */
export function keyBatch(keys: string[]): { buf: Buffer; starts: Int32Array; ends: Int32Array } {
  const buf = Buffer.from(keys.join(' '));
  const starts = new Int32Array(keys.length);
  const ends = new Int32Array(keys.length);
  let at = 0;
  keys.forEach((k, i) => {
    starts[i] = at;
    ends[i] = at + Buffer.byteLength(k);
    at = ends[i]! + 1;
  });
  return { buf, starts, ends };
}

/** The value the engine's getAt finds for the key buf[ks, ke) when handed `hint`, or undefined. */
export function valueWithHint(engine: KvEngine, buf: Buffer, ks: number, ke: number, hint: number): Buffer | undefined {
  const into = new ValueRange();
  const page = engine.getAt(buf, ks, ke, into, hint);
  return page === undefined ? undefined : bytesOf(page, into.start, into.end);
}
