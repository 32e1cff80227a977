import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanKeys } from '../services/protocol/key-scan.ts';
import { indexOfLf, LineEnds, LineFramer, type HeldCopies } from '../services/protocol/line-framer.ts';

interface Framed {
  lines: string[];
  overflows: number;
  /** The most bytes the framer held for an incomplete line at any point. */
  maxBuffered: number;
}

/** Feeds `input` in chunks of `step` bytes (0 = whole) and records what comes out. */
function frame(input: Buffer, max: number, step = 0, stopOn?: string): Framed {
  const out: Framed = { lines: [], overflows: 0, maxBuffered: 0 };
  const framer: LineFramer = new LineFramer(max, {
    onLine(buf, start, end) {
      const line = buf.toString('latin1', start, end);
      out.lines.push(line);
      if (line === stopOn) framer.stop();
    },
    onOverflow() {
      out.overflows++;
    },
  });
  const size = step === 0 ? Math.max(input.length, 1) : step;
  for (let i = 0; i < input.length; i += size) {
    framer.push(input.subarray(i, i + size));
    out.maxBuffered = Math.max(out.maxBuffered, framer.bufferedBytes);
  }
  return out;
}

const b = (s: string) => Buffer.from(s, 'latin1');

// [name, input, max line bytes, lines, overflows]
const cases: [string, string, number, string[], number][] = [
  ['LF-terminated lines', 'a\nbc\n', 8, ['a', 'bc'], 0],
  ['CRLF: the CR is dropped', 'a\r\nbc\r\n', 8, ['a', 'bc'], 0],
  ['a CR without LF stays in the line', 'a\rb\n', 8, ['a\rb'], 0],
  ['only the last CR before LF is dropped', 'a\r\r\n', 8, ['a\r'], 0],
  ['a lone CR at the end of the input is held', 'a\r', 8, [], 0],
  ['empty lines', '\n\r\n\n', 8, ['', '', ''], 0],
  ['no LF yet: nothing delivered', 'abc', 8, [], 0],
  ['a line exactly at the bound', 'x'.repeat(8) + '\n', 8, ['x'.repeat(8)], 0],
  ['the bound counts the CR', 'x'.repeat(7) + '\r\n', 8, ['x'.repeat(7)], 0],
  ['a line one byte over the bound', 'x'.repeat(9) + '\n', 8, [], 1],
  ['a CRLF line over the bound by its CR', 'x'.repeat(8) + '\r\n', 8, [], 1],
  ['lines before an over-long line are delivered, nothing after it', 'ok\n' + 'x'.repeat(9) + '\nafter\nmore\n', 8, ['ok'], 1],
  ['an over-long line without LF overflows once', 'y\n' + 'x'.repeat(40), 8, ['y'], 1],
  ['bytes over 0x7f pass through', '\xff\x00\x80\n', 8, ['\xff\x00\x80'], 0],
];

describe('LineFramer', () => {
  for (const [name, input, max, lines, overflows] of cases) {
    for (const [how, step] of [['whole', 0], ['byte by byte', 1], ['in pairs', 2], ['in threes', 3]] as const) {
      it(`${name} (${how})`, () => {
        const got = frame(b(input), max, step);
        expect(got.lines).toEqual(lines);
        expect(got.overflows).toBe(overflows);
        expect(got.maxBuffered).toBeLessThanOrEqual(max);
      });
    }
  }

  it('joins a CRLF split between chunks', () => {
    const lines: string[] = [];
    const framer = new LineFramer(16, { onLine: (buf, s, e) => lines.push(buf.toString('latin1', s, e)), onOverflow() {} });
    framer.push(b('GET k\r'));
    expect(lines).toEqual([]);
    framer.push(b('\nPING\r'));
    framer.push(b('\n'));
    expect(lines).toEqual(['GET k', 'PING']);
    expect(framer.bufferedBytes).toBe(0);
  });

  it('stop() from inside onLine drops the rest of the chunk and every later chunk', () => {
    for (const step of [0, 1]) {
      expect(frame(b('PING\nQUIT\nGET k\nSET k v\n'), 16, step, 'QUIT').lines).toEqual(['PING', 'QUIT']);
    }
  });

  it('never holds more than the bound, and ignores everything after an overflow', () => {
    const framer = new LineFramer(1000, { onLine() {}, onOverflow() {} });
    for (let i = 0; i < 100; i++) {
      framer.push(Buffer.alloc(64, 0x61));
      expect(framer.bufferedBytes).toBeLessThanOrEqual(1000);
    }
    expect(framer.overflowed).toBe(true);
    expect(framer.bufferedBytes).toBe(0);
  });

  it('a held partial line does not keep the chunk it came from', () => {
    let line: Buffer | undefined;
    const framer = new LineFramer(100, { onLine: (buf, s, e) => (line = buf.subarray(s, e)), onOverflow() {} });
    const chunk = b('SET k abc');
    framer.push(chunk);
    chunk.fill(0x7a); // the socket reuses or drops its chunk: the line must not change
    framer.push(b('def\n'));
    expect(line!.toString('latin1')).toBe('SET k abcdef');
  });

  it('any chunking of a stream gives the same lines as the whole stream', () => {
    const alphabet = fc.constantFrom(...b('ab \r\n\xff'));
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 200 }), fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 50 }), (bytes, cuts) => {
        const input = Buffer.from(bytes);
        const whole = frame(input, 12);
        const lines: string[] = [];
        let overflows = 0;
        const framer = new LineFramer(12, { onLine: (buf, s, e) => lines.push(buf.toString('latin1', s, e)), onOverflow: () => overflows++ });
        let pos = 0;
        for (let i = 0; pos < input.length; i++) {
          const n = cuts[i % cuts.length]!;
          framer.push(input.subarray(pos, pos + n));
          expect(framer.bufferedBytes).toBeLessThanOrEqual(12);
          pos += n;
        }
        expect(lines).toEqual(whole.lines);
        expect(overflows).toBe(whole.overflows);
      }),
      { numRuns: 300 },
    );
  });
});

describe('LineFramer: append() and deliver(n), the consumer pulling lines', () => {
  const b = (s: string) => Buffer.from(s, 'latin1');
  const pullFramer = (max: number, stopAfter?: (line: string) => boolean) => {
    const out = { lines: [] as string[], overflows: 0 };
    const framer = new LineFramer(max, {
      onLine: (buf, s, e) => {
        const line = buf.toString('latin1', s, e);
        out.lines.push(line);
        return stopAfter === undefined || !stopAfter(line);
      },
      onOverflow: () => void out.overflows++,
    });
    return { framer, out };
  };

  it('hands out at most n lines per call and keeps the rest, across chunks, in order', () => {
    const { framer, out } = pullFramer(100);
    framer.append(b('a\nb\nc'));
    framer.append(b('d\ne\n'));
    expect(framer.deliver(2)).toBe(2);
    expect(out.lines).toEqual(['a', 'b']);
    expect(framer.deliver(2)).toBe(2);
    expect(out.lines).toEqual(['a', 'b', 'cd', 'e']);
    expect(framer.hasUnframedInput).toBe(false);
    expect(framer.deliver(5)).toBe(0);
  });

  it('frames only the range appended: bytes past its end, an LF among them, are not its own', () => {
    const { framer, out } = pullFramer(100);
    const held = b('xxGET a\nSET b 1\nGET c\nzz\n'); // ranges of a buffer of copies, as the store's held reads
    framer.append(held, 2, 8); // 'GET a\n'
    expect(framer.deliver(10)).toBe(1);
    framer.append(held, 8, 18); // 'SET b 1\nGE': a line and a partial one, with 'T c\n' after the range
    expect(framer.deliver(10)).toBe(1);
    expect(framer.hasUnframedInput).toBe(false); // 'GE' is held as the start of a line
    expect(framer.bufferedBytes).toBe(2);
    framer.append(b('T d\n'));
    expect(framer.deliver(10)).toBe(1);
    expect(out.lines).toEqual(['GET a', 'SET b 1', 'GET d']);
    // A range held behind another, and ownHeldInput() copying only the range.
    framer.append(held, 2, 8);
    framer.append(held, 8, 16);
    framer.ownHeldInput();
    held.fill(0x21);
    expect(framer.deliver(10)).toBe(2);
    expect(out.lines.slice(3)).toEqual(['GET a', 'SET b 1']);
    framer.append(held, 3, 3); // empty: nothing
    expect(framer.hasUnframedInput).toBe(false);
  });

  it('ownHeldInput() copies what it holds, so the appended buffers may be overwritten', () => {
    const { framer, out } = pullFramer(100);
    const shared = b('one\ntwo\nthr');
    framer.append(shared);
    framer.append(b('more\n')); // a later chunk held behind the first
    expect(framer.deliver(1)).toBe(1);
    framer.ownHeldInput();
    shared.fill(0x21); // the next read into the same buffer
    expect(framer.deliver(10)).toBe(2);
    expect(out.lines).toEqual(['one', 'two', 'thrmore']);
    framer.ownHeldInput(); // nothing held: nothing to do
    expect(framer.hasUnframedInput).toBe(false);
  });

  it('stops after a line the sink answers false to, and resumes from the next one', () => {
    const { framer, out } = pullFramer(100, (line) => line === 'stop');
    framer.append(b('x\nstop\ny\n'));
    expect(framer.deliver(10)).toBe(2);
    expect(out.lines).toEqual(['x', 'stop']);
    expect(framer.deliver(10)).toBe(1);
    expect(out.lines).toEqual(['x', 'stop', 'y']);
  });

  it('reports an over-long line only when delivery reaches it, after every line before it', () => {
    const { framer, out } = pullFramer(8);
    framer.append(b('ok\n' + 'z'.repeat(20) + '\nnever\n'));
    expect(framer.deliver(1)).toBe(1);
    expect(out.overflows).toBe(0);
    expect(framer.deliver(10)).toBe(0);
    expect(out).toEqual({ lines: ['ok'], overflows: 1 });
    expect(framer.hasUnframedInput).toBe(false);
    framer.append(b('more\n'));
    expect(framer.deliver(10)).toBe(0);
  });

  it('matches push() line for line on random input, whatever the budgets', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 20 }), fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 10 }), (chunks, budgets) => {
        const pushed = pullFramer(16);
        for (const c of chunks) pushed.framer.push(Buffer.from(c));
        const pulled = pullFramer(16);
        let k = 0;
        for (const c of chunks) {
          pulled.framer.append(Buffer.from(c));
          pulled.framer.deliver(budgets[k++ % budgets.length]!);
        }
        while (pulled.framer.hasUnframedInput && pulled.framer.deliver(budgets[k++ % budgets.length]!) > 0);
        pulled.framer.deliver(Infinity);
        expect(pulled.out).toEqual(pushed.out);
      }),
      { numRuns: 300 },
    );
  });
});

describe('indexOfLf: the LF search of the framer and the key scanner', () => {
  // The first bytes are searched in JavaScript and the rest with buf.indexOf: an LF on
  // either side of that change, or past `end` on either side, must be found or ignored alike.
  it('finds the first LF of [from, end) wherever it is, and nothing past end', () => {
    for (const at of [0, 1, 126, 127, 128, 129, 130, 255, 4095]) {
      const buf = Buffer.alloc(5000, 0x61);
      buf[at + 3] = 0x0a;
      buf[at + 9] = 0x0a;
      expect(indexOfLf(buf, 3, buf.length), `LF at ${at + 3}`).toBe(at + 3);
      expect(indexOfLf(buf, 3, at + 3), `end at the LF at ${at + 3}`).toBe(-1);
      expect(indexOfLf(buf, 3, at + 4)).toBe(at + 3);
      expect(indexOfLf(buf, at + 4, buf.length)).toBe(at + 9);
      expect(indexOfLf(buf, at + 4, at + 9)).toBe(-1);
    }
    expect(indexOfLf(Buffer.alloc(300, 0x61), 0, 300)).toBe(-1);
    expect(indexOfLf(Buffer.from('\n'), 1, 1)).toBe(-1);
  });

  it('is buf.indexOf within the range on any bytes, views at any offset: those one bit from an LF, and the bytes that confuse a word-wise search', () => {
    // 0x0b, 0x08 and 0x8a differ from LF in one bit; 0x0a0b, 0x00 and 0xff make borrows and
    // sign bits in the four-byte step; a view at an odd offset misaligns its words.
    const alphabet = [0x0a, 0x0b, 0x08, 0x8a, 0x00, 0xff, 0x09, 0x61, 0x80, 0x7f];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...alphabet), { maxLength: 300 }),
        fc.nat(5),
        fc.nat(300),
        fc.nat(300),
        (bytes, shift, a, b) => {
          const whole = Buffer.alloc(bytes.length + shift, 0x0a);
          const buf = whole.subarray(shift);
          buf.set(bytes);
          const from = Math.min(a, b, buf.length);
          const end = Math.min(Math.max(a, b), buf.length);
          const lf = buf.indexOf(0x0a, from);
          expect(indexOfLf(buf, from, end)).toBe(lf === -1 || lf >= end ? -1 : lf);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('frames lines longer than the part searched in JavaScript, with stale LFs past the range', () => {
    const long = 'x'.repeat(700);
    const input = Buffer.from(`${long}\nGET k\n${long}y\n\n\n`, 'latin1');
    const lines: string[] = [];
    const framer = new LineFramer(1000, { onLine: (buf, s, e) => lines.push(buf.toString('latin1', s, e)), onOverflow: () => lines.push('overflow') });
    // The range stops inside the third line: the LFs after it are not its own.
    const end = input.length - 4;
    framer.append(input, 0, end);
    framer.deliver(Infinity);
    expect(lines).toEqual([long, 'GET k']);
    expect(framer.bufferedBytes).toBe(end - (long.length + 7));
  });
});

describe('held input copied into buffers lent by a pool (HeldCopies)', () => {
  /** A pool that spoils every buffer given back, so a framer reading one after giving it frames garbage. */
  class SpoilingPool implements HeldCopies {
    readonly free: Buffer[] = [];
    readonly lent = new Set<Buffer>();
    takes = 0;
    take(bytes: number): Buffer {
      this.takes++;
      const buf = this.free.pop() ?? Buffer.alloc(Math.max(bytes, 64));
      const copy = buf.length >= bytes ? buf : Buffer.alloc(bytes);
      this.lent.add(copy);
      return copy;
    }
    give(buf: Buffer): void {
      expect(this.lent.delete(buf)).toBe(true); // given once, and only what was lent
      buf.fill(0x21);
      this.free.push(buf);
    }
  }
  const bytes = fc.array(fc.constantFrom(...Buffer.from('GET SET k v 0123 \n\n\r\r  ', 'latin1')), { maxLength: 60 });

  it("holds a partial line in an exact copy of its own, not in a pooled read-sized copy: thousands of connections mid-line cost their bytes", () => {
    const pool = new SpoilingPool();
    const lines: string[] = [];
    const framer = new LineFramer(1 << 20, { onLine: (buf, st, e) => void lines.push(buf.toString('latin1', st, e)), onOverflow: () => {} }, pool);
    const shared = Buffer.from('SET k dmFs');
    framer.append(shared, 0, shared.length);
    framer.deliver(Infinity);
    framer.ownHeldInput();
    expect(framer.bufferedBytes).toBe(10);
    expect(pool.takes).toBe(0);
    shared.fill(0x21); // the shared read buffer's next read
    const rest = Buffer.from('dWU=\n');
    framer.append(rest, 0, rest.length);
    framer.deliver(Infinity);
    expect(lines).toEqual(['SET k dmFsdWU=']);
    expect(pool.takes).toBe(1); // the joined line, given back once the sink had it
    expect(pool.lent.size).toBe(0);
  });

  it('frames as a framer with copies of its own does, gives every copy back once framed (a line joined from pieces once the sink has it), and copies what it holds only once (property)', () => {
    fc.assert(
      fc.property(fc.array(bytes, { maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 40 }), (reads, budgets, maxLine) => {
        const shared = Buffer.alloc(80);
        const pool = new SpoilingPool();
        const outs = { plain: [] as string[], pooled: [] as string[] };
        // A line `k` stops the framer (as QUIT does) and is read only after: it is still the sink's then.
        const make = (out: string[], copies?: HeldCopies) => {
          const framer: LineFramer = new LineFramer(
            maxLine,
            {
              onLine: (buf, st, e) => {
                if (e - st === 1 && buf[st] === 0x6b) framer.stop();
                out.push(buf.toString('latin1', st, e));
              },
              onOverflow: () => void out.push('<overflow>'),
            },
            copies,
          );
          return framer;
        };
        const plain = make(outs.plain);
        const pooled = make(outs.pooled, pool);
        let k = 0;
        for (const read of reads) {
          if (read.length === 0) continue;
          shared.fill(0x0a);
          shared.set(read);
          for (const f of [plain, pooled]) {
            f.append(shared, 0, read.length);
            f.deliver(budgets[k % budgets.length]!);
            f.ownHeldInput();
          }
          shared.fill(0x21); // the next read's bytes
          const takes = pool.takes;
          pooled.ownHeldInput(); // already its own copy: no second one
          expect(pool.takes).toBe(takes);
          k++;
          for (const f of [plain, pooled]) f.deliver(budgets[k % budgets.length]!);
        }
        for (const f of [plain, pooled]) f.deliver(Infinity);
        expect(outs.pooled).toEqual(outs.plain);
        // Only a copy still being framed is out (a joined line goes back once the sink has
        // it; a line's pieces are the framer's own); after stop() none.
        expect(pool.lent.size).toBeLessThanOrEqual(pooled.hasUnframedInput ? 1 : 0);
        pooled.stop();
        expect(pool.lent.size).toBe(0);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('LineEnds: the LFs the key scan found, handed to the framer', () => {
  // The store scans each read for its keys (scanKeys) and hands the LFs it passed to the
  // framer of the same read, which then does not search for them again. Framing must be
  // the same as without them, whatever the bytes, the budgets and the held input, and a
  // framer must not read them once the read is copied (the runner's next scan overwrites them).
  const recording = (max: number) => {
    const out = { lines: [] as string[], overflows: 0 };
    const framer = new LineFramer(max, {
      onLine: (buf, s, e) => void out.lines.push(buf.toString('latin1', s, e)),
      onOverflow: () => void out.overflows++,
    });
    return { framer, out };
  };
  const bytes = fc.array(fc.constantFrom(...b('GET SET k v 0123 \n\n\r\r  ')), { maxLength: 60 });

  it('frames every read as it would without them, held lines resumed with a scan of their own too (property)', () => {
    fc.assert(
      fc.property(
        fc.array(bytes, { maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 40 }),
        (reads, budgets, keyRoom, maxLine) => {
          // As in the store: every read lands in one shared buffer, stale bytes after it.
          const shared = Buffer.alloc(80, 0x0a);
          const plain = recording(maxLine);
          const hinted = recording(maxLine);
          const starts = new Int32Array(keyRoom);
          const ends = new Int32Array(keyRoom);
          const lineEnds = new LineEnds(keyRoom + 2);
          let k = 0;
          for (const read of reads) {
            shared.fill(0x0a);
            shared.set(read);
            const n = read.length;
            if (n === 0) continue;
            plain.framer.append(shared, 0, n);
            plain.framer.deliver(budgets[k % budgets.length]!);
            plain.framer.ownHeldInput();
            scanKeys(shared, n, starts, ends, lineEnds);
            hinted.framer.append(shared, 0, n, lineEnds);
            hinted.framer.deliver(budgets[k % budgets.length]!);
            hinted.framer.ownHeldInput();
            lineEnds.at.fill(3); // the next scan's: wrong for what the framer holds
            lineEnds.count = lineEnds.at.length;
            k++;
            // A later turn, without a read: held lines resume, the hinted framer's with the
            // LFs of a scan from where it stopped (the store's CommandRunner.prefetchLines).
            plain.framer.deliver(budgets[k % budgets.length]!);
            const held = hinted.framer.heldChunk;
            if (held !== null) {
              scanKeys(held, hinted.framer.heldEnd, starts, ends, lineEnds, hinted.framer.heldStart);
              hinted.framer.useLineEnds(lineEnds);
            }
            hinted.framer.deliver(budgets[k % budgets.length]!);
            hinted.framer.forgetLineEnds();
            lineEnds.at.fill(3);
            lineEnds.count = lineEnds.at.length;
          }
          plain.framer.deliver(Infinity);
          hinted.framer.deliver(Infinity);
          expect(hinted.out).toEqual(plain.out);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('are the LFs of the lines the key scan passed, in order from the start (property)', () => {
    fc.assert(
      fc.property(bytes, fc.nat(60), fc.integer({ min: 1, max: 8 }), (input, cut, keyRoom) => {
        const buf = Buffer.from(input);
        const end = Math.min(cut, buf.length);
        const lfs: number[] = [];
        for (let i = buf.indexOf(10); i !== -1 && i < end; i = buf.indexOf(10, i + 1)) lfs.push(i);
        const lineEnds = new LineEnds(64);
        const keys = scanKeys(buf, end, new Int32Array(keyRoom), new Int32Array(keyRoom), lineEnds);
        const found = Array.from(lineEnds.at.subarray(0, lineEnds.count));
        expect(found).toEqual(lfs.slice(0, found.length));
        // With room for every key it passes every complete line.
        if (keys < keyRoom) expect(found).toEqual(lfs);
        // A scan with less room for line ends writes as many as fit, the same ones.
        const few = new LineEnds(2);
        scanKeys(buf, end, new Int32Array(keyRoom), new Int32Array(keyRoom), few);
        expect(Array.from(few.at.subarray(0, few.count))).toEqual(found.slice(0, 2));
      }),
      { numRuns: 1000 },
    );
  });
});
