import { expect } from 'vitest';
import type { ReplyScanner } from '../../services/cli/bench/reply-scanner.ts';

/** Feeds the stream whole, then byte by byte: both must give the same counts. */
export function scanBothWays(make: () => ReplyScanner, expect_: number[], stream: string | Buffer) {
  const data = Buffer.from(stream);
  const results = [];
  for (const chunks of [[data], [...data].map((b) => Buffer.from([b]))]) {
    const s = make();
    s.expect = Uint8Array.from(expect_);
    let done = 0;
    for (const c of chunks) done += s.feed(c);
    results.push({ done, misses: s.misses, errors: s.errors, wrong: s.wrong, broken: s.broken });
  }
  expect(results[1]).toEqual(results[0]);
  return results[0]!;
}
