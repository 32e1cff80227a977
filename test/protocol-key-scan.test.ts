// scanKeys is a hint for prefetching, but a hint that misses the keys the parser finds
// would make prefetching useless: for every line the parser accepts with a key, the
// scanner must name the same bytes, in the same order, whatever else the input holds.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { COMMAND_TABLE } from '../services/protocol/command-table.ts';
import { OK, ParsedCommand, parseCommand } from '../services/protocol/command-parser.ts';
import { scanKeys } from '../services/protocol/key-scan.ts';
import { LineEnds } from '../services/protocol/line-framer.ts';
import { MAX_KEY_BYTES } from '../services/protocol/limits.ts';

const scan = (text: string | Buffer, max = 64, end?: number): string[] => {
  const buf = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
  const starts = new Int32Array(max);
  const ends = new Int32Array(max);
  const n = scanKeys(buf, end ?? buf.length, starts, ends);
  return Array.from({ length: n }, (_, i) => buf.toString('latin1', starts[i], ends[i]));
};

describe('scanKeys', () => {
  it('names the key of each complete line, skipping values, CRs and lines without one', () => {
    expect(scan('GET a\nSET bb 123 456\r\nPING\nSETEX c 10 dmFs\nUSAGE\nDELETE dd\r\nTTL e\n')).toEqual(['a', 'bb', 'c', 'dd', 'e']);
  });

  it('stops at an incomplete line and at the end given, not at the buffer end', () => {
    expect(scan('GET a\nGET b\nGET c')).toEqual(['a', 'b']);
    expect(scan('GET a\nSET b 12345')).toEqual(['a']);
    // Bytes past `end` are stale (the store's shared read buffer): they do not complete a line.
    const buf = Buffer.from('GET a\nSET b xyz\nGET c\n', 'latin1');
    expect(scan(buf, 64, buf.indexOf('xyz'))).toEqual(['a']);
    expect(scan(buf, 64, buf.indexOf('GET c'))).toEqual(['a', 'b']);
  });

  it('stops early once it has passed enough lines with enough keys, and not before both', () => {
    const buf = Buffer.from('GET a\nPING\nGET b\nGET c\nGET d\n', 'latin1');
    const starts = new Int32Array(8);
    const ends = new Int32Array(8);
    const lineEnds = new LineEnds(8);
    expect(scanKeys(buf, buf.length, starts, ends, lineEnds, 0, { lines: 2, keys: 2 })).toBe(2); // a, b: three lines for two keys
    expect(lineEnds.count).toBe(3);
    expect(scanKeys(buf, buf.length, starts, ends, lineEnds, 0, { lines: 4, keys: 1 })).toBe(3);
    expect(lineEnds.count).toBe(4);
    expect(scanKeys(buf, buf.length, starts, ends, lineEnds, 0, { lines: 2, keys: 9 })).toBe(4); // never two keys enough: all of it
    expect(lineEnds.count).toBe(5);
  });

  it('starts where it is told (lines held back from an earlier turn), ranges still counted from the buffer\'s start', () => {
    const buf = Buffer.from('GET a\nGET b\nSET c 123\n', 'latin1');
    const starts = new Int32Array(8);
    const ends = new Int32Array(8);
    const from = buf.indexOf('GET b');
    expect(scanKeys(buf, buf.length, starts, ends, undefined, from)).toBe(2);
    expect([starts[0], ends[0], starts[1]]).toEqual([from + 4, from + 5, buf.indexOf('c 123')]);
  });

  it('writes at most as many ranges as it has room for', () => {
    const lines = Array.from({ length: 100 }, (_, i) => `GET k${i}\n`).join('');
    expect(scan(lines, 8)).toEqual(Array.from({ length: 8 }, (_, i) => `k${i}`));
  });

  it('leaves out second words too long to be a key', () => {
    expect(scan(`GET ${'k'.repeat(MAX_KEY_BYTES)}\nGET ${'k'.repeat(MAX_KEY_BYTES + 1)}\nGET z\n`)).toEqual(['k'.repeat(MAX_KEY_BYTES), 'z']);
  });

  it('names, in order, the key of every line the parser accepts with one (property)', () => {
    const word = fc.stringMatching(/^[!-~]{1,12}$/);
    const keyed = COMMAND_TABLE.filter((c) => c.args.startsWith('key'));
    const line = fc.oneof(
      fc.tuple(fc.constantFrom(...keyed), word, fc.integer({ min: 1, max: 99 }), fc.base64String({ maxLength: 40 }), fc.boolean()).map(
        ([c, key, seconds, value, crlf]) => {
          const args = c.args === 'key' ? [key] : c.args === 'key value' ? [key, value || 'AA=='] : c.args === 'key seconds' ? [key, seconds] : [key, seconds, value || 'AA=='];
          return `${[c.name.toLowerCase(), ...args].join(' ')}${crlf ? '\r' : ''}\n`;
        },
      ),
      fc.constantFrom('PING\n', 'USAGE\r\n', '\n', ' \n', 'GET\n', 'NOPE x y\n'),
      fc.string({ maxLength: 20 }).map((s) => `${s.replace(/\n/g, '')}\n`),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
        const buf = Buffer.from(lines.join(''), 'latin1');
        const parsed: string[] = [];
        const p = new ParsedCommand();
        let at = 0;
        for (let lf = buf.indexOf(10); lf !== -1; at = lf + 1, lf = buf.indexOf(10, at)) {
          const end = lf > at && buf[lf - 1] === 13 ? lf - 1 : lf;
          if (parseCommand(buf, at, end, 1 << 20, p) === OK && COMMAND_TABLE[p.command]!.args.startsWith('key')) parsed.push(buf.toString('latin1', p.keyStart, p.keyEnd));
        }
        // The scanner may name more (it does not validate), never fewer or others among them.
        const scanned = scan(buf, 64);
        let k = 0;
        for (const key of parsed) {
          while (k < scanned.length && scanned[k] !== key) k++;
          expect(k, `key ${key} of ${JSON.stringify(lines)}`).toBeLessThan(scanned.length);
          k++;
        }
      }),
      { numRuns: 300 },
    );
  });
});
