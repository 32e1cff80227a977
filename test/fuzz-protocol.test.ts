// Fuzzing of the protocol layers with random and mutated input: the line framer against a
// reference splitter (every split point, byte by byte, random chunkings), the command
// parser against a reference parser written from SPEC §1 (lines embedded in random bytes,
// so it can never read outside its line), and the real store server, which must send
// exactly one reply per complete line, the reply a reference keyspace predicts, and run
// nothing that was not sent as a whole line; with a password set too (SPEC §8), where
// the reference also follows each connection's AUTH state.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  COMMAND_NAMES,
  EMPTY_COMMAND,
  INVALID_EXPIRE_TIME,
  INVALID_KEY,
  OK,
  ParsedCommand,
  UNKNOWN_COMMAND,
  VALUE_TOO_LARGE,
  WRONG_NUMBER_OF_ARGUMENTS,
  parseCommand,
} from '../services/protocol/command-parser.ts';
import { LineFramer } from '../services/protocol/line-framer.ts';
import { lineBound } from '../services/protocol/limits.ts';
import { PARSE_ERROR_REPLIES } from '../services/protocol/replies.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { LineClient } from './helpers/line-client.ts';
import { refValidKey } from './helpers/reference-key-rule.ts';
import { startTestStore, type TestStore } from './helpers/store-harness.ts';
import { Secret } from '../services/shared/secret.ts';

afterEach(destroyAll);

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;

/** Bounds a property (shrinking included) when it fails, so a failure reports instead of running on. */
const limits = { plugins: [fc.interruptAfterTimeLimit(20_000)] };

// ---------------------------------------------------------------- generators

const valid = [
  'SET k v', 'SET k ', 'SET k  two  spaces ', 'GET k', 'DELETE k', 'USAGE', 'PING', 'STATS', 'TTL k',
  'SETEX k 5 v', 'SETEX k 1000000000 v', 'EXPIRE k 7', 'get k', 'sEt K value', 'SET é ünïcode', 'QUIT',
  // PASSWORD below, and near misses of it.
  'AUTH pw k', 'auth pw k', 'AUTH pw', 'AUTH  pw k', 'AUTH pw k ', 'AUTH ', 'AUTH',
];
/** The password of the stores that have one; its space makes the rest-of-line rule matter. */
const PASSWORD = 'pw k';

/** Bytes that matter to framing and parsing, plus letters of command names. */
const special = fc.constantFrom(LF, CR, SPACE, 0x00, 0x7f, 0xff, 0xc3, 0xa9, 0x80, 0xe2, 0x09, 0x30, 0x31, 0x39, ...Buffer.from('SETGDLXPIUAQkv'));
const anyByte = fc.integer({ min: 0, max: 255 });

type Mutation = { at: number; kind: 'insert' | 'replace' | 'delete' | 'duplicate'; byte: number; len: number };
const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('insert', 'replace', 'delete', 'duplicate'),
  byte: fc.oneof(special, anyByte),
  len: fc.integer({ min: 1, max: 8 }),
});

function mutate(line: Buffer, mutations: Mutation[]): Buffer {
  let b = line;
  for (const m of mutations) {
    const at = b.length === 0 ? 0 : m.at % (b.length + 1);
    switch (m.kind) {
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), Buffer.from([m.byte]), b.subarray(at)]);
        break;
      case 'replace':
        if (at < b.length) b = Buffer.concat([b.subarray(0, at), Buffer.from([m.byte]), b.subarray(at + 1)]);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.len)]);
        break;
      case 'duplicate':
        b = Buffer.concat([b.subarray(0, at + m.len), b.subarray(at)]);
        break;
    }
  }
  return b;
}

/** One line's bytes (no LF): a valid command, a mutated one, random bytes, or a huge token. */
function lineArb(hugeLen: number): fc.Arbitrary<Buffer> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...valid).map((s) => Buffer.from(s)) },
    { weight: 5, arbitrary: fc.tuple(fc.constantFrom(...valid), fc.array(mutationArb, { minLength: 1, maxLength: 4 })).map(([s, m]) => mutate(Buffer.from(s), m)) },
    { weight: 2, arbitrary: fc.array(fc.oneof(special, anyByte), { maxLength: 30 }).map((a) => Buffer.from(a)) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('SET k ', 'GET ', 'SETEX k 9 ', 'X', 'SET '), fc.integer({ min: hugeLen - 3, max: hugeLen + 3 }), fc.constantFrom(0x61, 0x20, 0xff))
        .map(([head, n, fill]) => Buffer.concat([Buffer.from(head), Buffer.alloc(Math.max(0, n - head.length), fill)])),
    },
  );
}

// ---------------------------------------------------------------- framer

interface Framed {
  lines: Buffer[];
  overflowed: boolean;
}

/** What the framer must deliver: LF-separated lines, CR before LF dropped, nothing past the first line over `max`. */
function referenceFrame(input: Buffer, max: number): Framed {
  const lines: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const lf = input.indexOf(LF, pos);
    if (lf === -1) return { lines, overflowed: input.length - pos > max };
    if (lf - pos > max) return { lines, overflowed: true };
    const end = lf > pos && input[lf - 1] === CR ? lf - 1 : lf;
    lines.push(input.subarray(pos, end));
    pos = lf + 1;
  }
}

/** Feeds `chunks` to a framer, checking the bound and the callbacks as it goes. */
function runFramer(chunks: Buffer[], max: number): Framed {
  const lines: Buffer[] = [];
  let overflows = 0;
  const framer = new LineFramer(max, {
    onLine(buf, start, end) {
      if (overflows > 0) throw new Error('a line after the overflow');
      if (!(start >= 0 && start <= end && end <= buf.length)) throw new Error(`line view [${start}, ${end}) outside its buffer of ${buf.length}`);
      lines.push(Buffer.from(buf.subarray(start, end))); // copy: the view is only valid during the call
    },
    onOverflow() {
      overflows++;
    },
  });
  for (const chunk of chunks) {
    framer.push(chunk);
    if (framer.bufferedBytes > max) throw new Error(`framer holds ${framer.bufferedBytes} bytes, bound ${max}`);
  }
  if (overflows > 1) throw new Error(`overflow reported ${overflows} times`);
  return { lines, overflowed: overflows === 1 };
}

function expectFramed(got: Framed, want: Framed, how: string): void {
  const hex = (f: Framed) => ({ lines: f.lines.map((l) => l.toString('hex')), overflowed: f.overflowed });
  expect(hex(got), how).toEqual(hex(want));
}

const streamArb = (max: number) =>
  fc.oneof(
    fc.array(lineArb(max), { maxLength: 8 }).map((lines) => Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\n')]))),
    fc.array(lineArb(max), { maxLength: 8 }).map((lines) => Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\r\n')]))),
    fc.array(fc.oneof(special, anyByte), { maxLength: 120, size: 'max' }).map((a) => Buffer.from(a)),
  );

describe('LineFramer under random input', () => {
  it('matches the reference split at every byte boundary, byte by byte, and whole', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }).chain((max) => fc.tuple(fc.constant(max), streamArb(max))), ([max, input]) => {
        const want = referenceFrame(input, max);
        expectFramed(runFramer([input], max), want, 'whole');
        expectFramed(runFramer([...input].map((b) => Buffer.from([b])), max), want, 'byte by byte');
        for (let cut = 1; cut < input.length; cut++) {
          expectFramed(runFramer([input.subarray(0, cut), input.subarray(cut)], max), want, `split at ${cut}`);
        }
      }),
      { ...limits, numRuns: 250 },
    );
  });

  it('matches the reference under random chunkings, empty chunks included', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }).chain((max) => fc.tuple(fc.constant(max), streamArb(max))),
        fc.array(fc.integer({ min: 0, max: 17 }), { minLength: 1, maxLength: 20 }),
        ([max, input], sizes) => {
          const chunks: Buffer[] = [];
          for (let pos = 0, i = 0; pos < input.length; i++) {
            const n = sizes[i % sizes.length]!;
            chunks.push(input.subarray(pos, pos + n));
            pos += n;
            if (i > input.length * 4 + 10) break; // all-zero sizes: stop feeding empty chunks
          }
          const fed = Buffer.concat(chunks);
          expectFramed(runFramer(chunks, max), referenceFrame(fed, max), `chunks ${sizes.join(',')}`);
        },
      ),
      { ...limits, numRuns: 400 },
    );
  });

  it('a CR without LF, NUL bytes and invalid UTF-8 are line content, never separators', () => {
    const input = Buffer.from([0x41, CR, 0x42, 0x00, 0xff, 0xfe, CR, CR, LF, CR, 0xc3, LF, CR]);
    for (let cut = 0; cut <= input.length; cut++) {
      const got = runFramer([input.subarray(0, cut), input.subarray(cut)], 16);
      expect(got.lines.map((l) => l.toString('hex'))).toEqual(['410d4200fffe0d', '0dc3']);
      expect(got.overflowed).toBe(false);
    }
  });

  it('a stream with no LF at all is held only up to the bound, then dropped with one overflow', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 700 }), (max, chunk) => {
        let overflows = 0;
        const framer = new LineFramer(max, { onLine: () => { throw new Error('no line expected'); }, onOverflow: () => void overflows++ });
        const piece = Buffer.alloc(chunk, 0x78);
        for (let sent = 0; sent <= max + 2 * chunk; sent += chunk) {
          framer.push(piece);
          expect(framer.bufferedBytes).toBeLessThanOrEqual(max);
        }
        expect(overflows).toBe(1);
        expect(framer.bufferedBytes).toBe(0);
      }),
      { ...limits, numRuns: 100 },
    );
  });
});

// ---------------------------------------------------------------- parser

const NAMES = ['SET', 'GET', 'DELETE', 'USAGE', 'QUIT', 'PING', 'SETEX', 'EXPIRE', 'TTL', 'STATS', 'AUTH'];

function refSeconds(token: Buffer): number {
  const s = token.toString('latin1');
  if (!/^[0-9]{1,10}$/.test(s)) return 0;
  const n = Number(s);
  return n >= 1 && n <= 1e9 ? n : 0;
}

interface RefParse {
  code: number;
  name?: string;
  key?: Buffer;
  value?: Buffer;
  seconds?: number;
}

/** The reference parser: SPEC §1's table and the error precedence documented in command-parser.ts. */
function refParse(line: Buffer, maxValue: number): RefParse {
  if (line.length === 0) return { code: EMPTY_COMMAND };
  const sp = line.indexOf(SPACE);
  const nameBytes = sp === -1 ? line : line.subarray(0, sp);
  // ASCII-only upper-casing: 'ß'.toUpperCase() is 'SS', which must not make a name.
  const name = Buffer.from(nameBytes.map((b) => (b >= 0x61 && b <= 0x7a ? b - 0x20 : b))).toString('latin1');
  if (!NAMES.includes(name)) return { code: UNKNOWN_COMMAND };
  const args = sp === -1 ? null : line.subarray(sp + 1);
  const e = (code: number): RefParse => ({ code, name });
  switch (name) {
    case 'GET':
    case 'DELETE':
    case 'TTL': {
      if (args === null) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const sp1 = args.indexOf(SPACE);
      const key = sp1 === -1 ? args : args.subarray(0, sp1);
      if (!refValidKey(key)) return e(INVALID_KEY);
      if (sp1 !== -1) return e(WRONG_NUMBER_OF_ARGUMENTS);
      return { code: OK, name, key };
    }
    case 'SET': {
      if (args === null) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const sp1 = args.indexOf(SPACE);
      if (sp1 === -1) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const key = args.subarray(0, sp1);
      if (!refValidKey(key)) return e(INVALID_KEY);
      const value = args.subarray(sp1 + 1);
      if (value.length > maxValue) return e(VALUE_TOO_LARGE);
      return { code: OK, name, key, value };
    }
    case 'SETEX': {
      if (args === null) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const sp1 = args.indexOf(SPACE);
      const sp2 = sp1 === -1 ? -1 : args.indexOf(SPACE, sp1 + 1);
      if (sp2 === -1) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const key = args.subarray(0, sp1);
      if (!refValidKey(key)) return e(INVALID_KEY);
      const seconds = refSeconds(args.subarray(sp1 + 1, sp2));
      if (seconds === 0) return e(INVALID_EXPIRE_TIME);
      const value = args.subarray(sp2 + 1);
      if (value.length > maxValue) return e(VALUE_TOO_LARGE);
      return { code: OK, name, key, value, seconds };
    }
    case 'EXPIRE': {
      if (args === null) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const sp1 = args.indexOf(SPACE);
      if (sp1 === -1) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const key = args.subarray(0, sp1);
      if (!refValidKey(key)) return e(INVALID_KEY);
      const rest = args.subarray(sp1 + 1);
      if (rest.includes(SPACE)) return e(WRONG_NUMBER_OF_ARGUMENTS);
      const seconds = refSeconds(rest);
      if (seconds === 0) return e(INVALID_EXPIRE_TIME);
      return { code: OK, name, key, seconds };
    }
    case 'AUTH':
      // The password is the rest of the line, whatever it holds (SPEC §8).
      return args === null ? e(WRONG_NUMBER_OF_ARGUMENTS) : { code: OK, name, value: args };
    default:
      return args === null ? { code: OK, name } : e(WRONG_NUMBER_OF_ARGUMENTS);
  }
}

describe('parseCommand under random and mutated lines', () => {
  it('agrees with the reference parser, reading nothing outside its line', () => {
    const out = new ParsedCommand();
    fc.assert(
      fc.property(
        lineArb(300),
        fc.uint8Array({ maxLength: 12 }),
        fc.array(fc.oneof(special, anyByte), { maxLength: 12 }),
        fc.constantFrom(0, 1, 4, 255, 256),
        (line, before, after, maxValue) => {
          // The line sits inside a larger buffer, as in a socket chunk: bytes around it
          // (spaces, digits, letters) must not change the outcome.
          const buf = Buffer.concat([Buffer.from(before), line, Buffer.from(after)]);
          const start = before.length;
          const end = start + line.length;
          const want = refParse(line, maxValue);
          const code = parseCommand(buf, start, end, maxValue, out);
          expect(code, line.toString('latin1')).toBe(want.code);
          if (want.name !== undefined) expect(COMMAND_NAMES[out.command]).toBe(want.name);
          if (code !== OK) return;
          if (want.key !== undefined) {
            expect(out.keyStart >= start && out.keyEnd <= end).toBe(true);
            expect(buf.subarray(out.keyStart, out.keyEnd).equals(want.key)).toBe(true);
          }
          if (want.value !== undefined) {
            expect(out.valueStart >= start && out.valueEnd === end).toBe(true);
            expect(buf.subarray(out.valueStart, out.valueEnd).equals(want.value)).toBe(true);
          }
          if (want.seconds !== undefined) expect(out.seconds).toBe(want.seconds);
        },
      ),
      { ...limits, numRuns: 3000 },
    );
  });

  it('a well-formed command is exactly its line: name, key, seconds and value put back together give the line', () => {
    const out = new ParsedCommand();
    fc.assert(
      fc.property(lineArb(64), (line) => {
        const code = parseCommand(line, 0, line.length, 1 << 20, out);
        if (code !== OK) return;
        const name = COMMAND_NAMES[out.command]!;
        const parts: Buffer[] = [line.subarray(0, name.length)];
        if (['GET', 'DELETE', 'TTL', 'SET', 'SETEX', 'EXPIRE'].includes(name)) parts.push(line.subarray(out.keyStart, out.keyEnd));
        if (name === 'SETEX' || name === 'EXPIRE') {
          // The token as sent (leading zeros are digits too), and it must mean out.seconds.
          const token = line.subarray(out.keyEnd + 1, name === 'SETEX' ? out.valueStart - 1 : line.length);
          expect(token.toString('latin1')).toMatch(/^\d+$/);
          expect(Number(token.toString('latin1'))).toBe(out.seconds);
          parts.push(token);
        }
        if (name === 'SET' || name === 'SETEX' || name === 'AUTH') parts.push(line.subarray(out.valueStart, out.valueEnd));
        const rebuilt = Buffer.concat(parts.flatMap((p, i) => (i === 0 ? [p] : [Buffer.from(' '), p])));
        expect(rebuilt.toString('hex')).toBe(line.toString('hex'));
      }),
      { ...limits, numRuns: 2000, examples: [[Buffer.from('EXPIRE k 007')], [Buffer.from('SETEX k 010 v a')]] },
    );
  });
});

// ---------------------------------------------------------------- server

function splitAtLf(stream: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let pos = 0;
  for (let lf = stream.indexOf(LF); lf !== -1; lf = stream.indexOf(LF, pos)) {
    out.push(stream.subarray(pos, lf));
    pos = lf + 1;
  }
  out.push(stream.subarray(pos));
  return out;
}

/**
 * The replies a fresh store must send for `lines` on one connection (clock frozen, no
 * eviction), and whether it then closes: after QUIT, at an over-long line, or at the
 * third wrong password. With `password`, the connection starts unauthenticated.
 */
function expectedReplies(lines: Buffer[], maxValue: number, password?: string): { replies: string[]; closes: boolean; ran: number } {
  const bound = lineBound(maxValue);
  const keys = new Map<string, { value: Buffer; ttl: number }>();
  const replies: string[] = [];
  let ran = 0;
  let authenticated = password === undefined;
  let failures = 0;
  for (const raw of lines) {
    if (raw.length > bound) {
      replies.push('ERROR line too long');
      return { replies, closes: true, ran };
    }
    ran++;
    // The framer drops one CR right before the LF.
    const line = raw.length > 0 && raw[raw.length - 1] === CR ? raw.subarray(0, raw.length - 1) : raw;
    const p = refParse(line, maxValue);
    // Before AUTH only AUTH and QUIT are read; any other line, well-formed or not, is refused.
    if (!authenticated && p.name !== 'AUTH' && p.name !== 'QUIT') {
      replies.push('ERROR authentication required');
      continue;
    }
    if (p.code !== OK) {
      replies.push(PARSE_ERROR_REPLIES[p.code]!.trimEnd());
      continue;
    }
    const key = p.key?.toString('utf8') ?? '';
    const held = keys.get(key);
    switch (p.name) {
      case 'SET':
      case 'SETEX':
        keys.set(key, { value: Buffer.from(p.value!), ttl: p.seconds ?? -1 });
        replies.push('OK');
        break;
      case 'GET':
        replies.push(held ? `VALUE ${held.value.toString('base64')}` : 'NOT_FOUND');
        break;
      case 'DELETE':
        keys.delete(key);
        replies.push('OK');
        break;
      case 'TTL':
        replies.push(held ? `TTL ${held.ttl}` : 'NOT_FOUND');
        break;
      case 'EXPIRE':
        if (held) held.ttl = p.seconds!;
        replies.push(held ? 'OK' : 'NOT_FOUND');
        break;
      case 'USAGE': {
        let usage = 0;
        for (const [k, e] of keys) usage += Buffer.byteLength(k) + e.value.length;
        replies.push(`USAGE ${usage}`);
        break;
      }
      case 'PING':
        replies.push('PONG');
        break;
      case 'STATS':
        replies.push('STATS*');
        break;
      case 'QUIT':
        replies.push('BYE');
        return { replies, closes: true, ran };
      case 'AUTH':
        if (password === undefined) {
          replies.push('ERROR authentication not enabled');
        } else if (p.value!.equals(Buffer.from(password))) {
          replies.push('OK');
          authenticated = true;
        } else {
          replies.push('ERROR invalid password');
          if (++failures === 3) return { replies, closes: true, ran };
        }
        break;
    }
  }
  return { replies, closes: false, ran };
}

/**
 * Random and mutated lines (a mutation may have put an LF inside one), then an unterminated
 * tail, as one stream; and the sizes of the pieces it is sent in, in turn.
 */
function pipelinedStreamArb(maxValue: number): fc.Arbitrary<{ stream: Buffer; sizes: number[] }> {
  return fc
    .tuple(
      fc.array(lineArb(lineBound(maxValue)), { minLength: 1, maxLength: 25 }),
      fc.uint8Array({ maxLength: 20 }),
      fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
    )
    .map(([lines, tail, sizes]) => ({ stream: Buffer.concat([...lines.flatMap((l) => [l, Buffer.from('\n')]), Buffer.from(tail)]), sizes }));
}

function sendInPieces(c: LineClient, stream: Buffer, sizes: number[]): void {
  for (let pos = 0, i = 0; pos < stream.length; i++) {
    const n = sizes[i % sizes.length]!;
    c.send(stream.subarray(pos, pos + n));
    pos += n;
  }
}

/** The replies received, each STATS reply as the reference's `STATS*` (its counts are the store's own). */
function receivedReplies(c: LineClient, expected: string[]): string[] {
  return c.received.map((r, i) => (expected[i] === 'STATS*' && r.startsWith('STATS keys=') ? 'STATS*' : r));
}

/** A property over pipelined streams (see pipelinedStreamArb), each run against a fresh store (with `password`, if given) and one client. */
function onFreshStore(maxValue: number, check: (store: TestStore, c: LineClient, stream: Buffer, sizes: number[]) => Promise<void>, password?: string) {
  return fc.asyncProperty(pipelinedStreamArb(maxValue), async ({ stream, sizes }) => {
    const store = await startTestStore({ maxValueBytes: maxValue, password: password === undefined ? undefined : new Secret(password) });
    try {
      await check(store, await store.client(), stream, sizes);
    } finally {
      store.service.destroy();
    }
  });
}

describe.each([
  ['no password', undefined],
  ['a password', PASSWORD],
])('the store server under random and mutated input, with %s', (_, password) => {
  it('sends exactly one reply per complete line, the one a reference keyspace predicts, and runs nothing else', async () => {
    const maxValue = 48; // line bound 560: huge tokens cross it
    await fc.assert(
      onFreshStore(maxValue, async (store, c, stream, sizes) => {
        const segments = splitAtLf(stream);
        const complete = segments.slice(0, -1);
        const rest = segments.at(-1)!;
        const before = expectedReplies(complete, maxValue, password);
        // Unless the stream ends the connection, an LF then completes the tail and a PING follows.
        const finished = before.closes || rest.length > lineBound(maxValue);
        const { replies, ran, closes } = expectedReplies(finished ? [...complete, rest] : [...complete, rest, Buffer.from('PING')], maxValue, password);
        sendInPieces(c, stream, sizes);
        if (!finished) {
          // Nothing for the tail yet: a reply to it now would be a command it did not send whole.
          await c.lines(before.replies.length);
          expect(c.received).toHaveLength(before.replies.length);
          c.send('\nPING\n');
          await c.lines(replies.length - before.replies.length);
        } else {
          await c.lines(replies.length);
        }
        expect(receivedReplies(c, replies)).toEqual(replies);
        // Every command the server ran came from one complete line.
        expect(store.service.metrics.commands.reduce((a, b) => a + b, 0)).toBe(ran);
        if (closes) {
          await c.closed;
          expect(c.received).toHaveLength(replies.length);
        }
      }, password),
      { ...limits, numRuns: 60 },
    );
  });

  it('a client that half-closes after its stream gets every reply to its complete lines, then the close; a partial last line never runs', async () => {
    const maxValue = 48;
    await fc.assert(
      onFreshStore(maxValue, async (store, c, stream, sizes) => {
        const segments = splitAtLf(stream);
        const rest = segments.at(-1)!;
        // An over-long partial line is still answered (the store need not see its end to know).
        const sent = rest.length > lineBound(maxValue) ? segments : segments.slice(0, -1);
        const { replies, ran } = expectedReplies(sent, maxValue, password);
        sendInPieces(c, stream, sizes);
        c.socket.end(); // FIN: nothing more will come, the replies still must
        await c.closed;
        expect(receivedReplies(c, replies)).toEqual(replies);
        expect(store.service.metrics.commands.reduce((a, b) => a + b, 0)).toBe(ran);
      }, password),
      { ...limits, numRuns: 40 },
    );
  });
});
