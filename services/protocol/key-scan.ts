import { viewOf } from '../shared/byte-views.ts';
import { plainKeyEnd } from './key-rules.ts';
import { MAX_KEY_BYTES } from './limits.ts';
import { indexOfLf, type LineEnds } from './line-framer.ts';

const LF = 10;
const CR = 13;
const SPACE = 32;

/** Where a scan may stop early: once it has passed `lines` lines and found `keys` keys, what it would find next is not needed. */
export interface ScanEnough {
  readonly lines: number;
  readonly keys: number;
}

/**
 * Where the keys of the complete lines in buf[from, end) are, as a hint for prefetching:
 * every command that names a key names it first (see the command table), so the key
 * guessed for a line is its second word. Nothing is validated: a line without a key, or a
 * malformed one, gives a range that names no key, which costs the engine a wasted lookup
 * and nothing else; the parser still decides what each line means. Stops at the first
 * incomplete line or after starts.length lines with a key-sized second word. Returns how
 * many ranges it wrote: line k's is [starts[k], ends[k]).
 *
 * `lineEnds`, when given, gets the LF of every line it passed, in order from buf[from] (as
 * many as it has room for), for the framer of the same bytes (LineFramer.append): each is
 * the first LF after the one before, since no scan below goes past an LF. `enough`, when
 * given, ends the scan early (ScanEnough).
 */
export function scanKeys(buf: Uint8Array, end: number, starts: Int32Array, ends: Int32Array, lineEnds?: LineEnds, from = 0, enough?: ScanEnough): number {
  const max = starts.length;
  const lfs = lineEnds?.at;
  const maxLines = lfs === undefined ? 0 : lfs.length;
  const enoughLines = enough === undefined ? Infinity : enough.lines;
  const enoughKeys = enough === undefined ? 0 : enough.keys;
  let lines = 0; // complete lines passed: each turn of the loop passes one, or stops
  let count = 0;
  let pos = from;
  while (pos < end && count < max && (lines < enoughLines || count < enoughKeys)) {
    let i = pos;
    while (i < end && buf[i] !== SPACE && buf[i] !== LF) i++;
    if (i >= end) break;
    if (buf[i] === LF) {
      if (lines < maxLines) lfs![lines] = i;
      lines++;
      pos = i + 1; // a line of one word: no key
      continue;
    }
    const keyStart = i + 1;
    // Printable ASCII four bytes a step, then byte by byte past anything else (UTF-8).
    let j = plainKeyEnd(viewOf(buf), keyStart, end);
    while (j < end && buf[j] !== SPACE && buf[j] !== LF && buf[j] !== CR) j++;
    if (j >= end) break;
    const lf = buf[j] === LF ? j : indexOfLf(buf, j, end);
    if (lf < 0) break; // an incomplete line: its key may not be all there yet
    if (lines < maxLines) lfs![lines] = lf;
    lines++;
    if (j > keyStart && j - keyStart <= MAX_KEY_BYTES) {
      starts[count] = keyStart;
      ends[count] = j;
      count++;
    }
    pos = lf + 1;
  }
  if (lineEnds !== undefined) lineEnds.count = Math.min(lines, maxLines);
  return count;
}
