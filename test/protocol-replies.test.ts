// Reply lines are written and read in one place (services/protocol/replies.ts): these
// checks fail when a kind of reply has an encoder and no decoder or the other way round,
// when the store writes a reply the decoder reads otherwise, when the client, the CLI or
// the bench scanner reads a reply differently from the decoder, or when a module outside
// services/protocol/ spells a reply line of its own.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreProtocolError, StoreReplyError } from '../services/client/errors.ts';
import { EXPECT_GET, EXPECT_SET, LineReplyScanner } from '../services/cli/bench/reply-scanner.ts';
import { displayReply } from '../services/cli/reply-display.ts';
import { replyLineJson, statsJson, valueJson } from '../services/cli/reply-json.ts';
import { PARSE_ERROR_REASONS } from '../services/protocol/command-parser.ts';
import {
  BYE_REPLY, decodeReply, ERROR_REASONS, LINE_TOO_LONG_REPLY, MAX_CONNECTIONS_REPLY, NOT_FOUND_REPLY, OK_REPLY, OUT_OF_MEMORY_REPLY,
  PARSE_ERROR_REPLY_BYTES, PARSE_ERROR_REPLY_REASONS, PONG_REPLY, REPLY_KINDS, statsReply, ttlReply, usageReply, valueReplyLength,
  writeValueReply, INLINE_BASE64_MAX_BYTES, ReplyTarget, type Reply, type ReplyKind,
} from '../services/protocol/replies.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { RecordingCommands, refusal } from './helpers/recording-commands.ts';
import { startTestStore } from './helpers/store-harness.ts';

afterEach(destroyAll);

/** A GET reply as the store writes it. */
function valueReply(value: Buffer): Buffer {
  const out = Buffer.alloc(valueReplyLength(value.length) + 3, 0x2a);
  // Written at an offset into a bigger buffer, as into the store's reply buffer.
  const end = writeValueReply(new ReplyTarget(out), 2, new DataView(value.buffer, value.byteOffset, value.length), 0, value.length);
  expect(end).toBe(2 + valueReplyLength(value.length));
  return out.subarray(2, end);
}

const binary = Buffer.from([0x00, 0xff, 0x0d, 0x20, 0x41, 0x80, 0x0d]);

/** Every kind of reply: what the encoders write, and what the decoder must read back. */
const ENCODED: Readonly<Record<Exclude<ReplyKind, 'unknown'>, readonly [Buffer | string, Reply][]>> = {
  ok: [[OK_REPLY, { kind: 'ok' }]],
  not_found: [[NOT_FOUND_REPLY, { kind: 'not_found' }]],
  pong: [[PONG_REPLY, { kind: 'pong' }]],
  bye: [[BYE_REPLY, { kind: 'bye' }]],
  value: [Buffer.alloc(0), Buffer.from('v'), Buffer.from('hello world'), binary, Buffer.alloc(1000, 0xfe)].map((v) => [valueReply(v), { kind: 'value', value: v }]),
  usage: [0, 1, 123_456_789_012].map((n) => [usageReply(n), { kind: 'usage', bytes: n }]),
  ttl: [-1, 1, 1_000_000].map((n) => [ttlReply(n), { kind: 'ttl', seconds: n }]),
  stats: [
    [statsReply({}), { kind: 'stats', stats: {} }],
    [statsReply({ keys: 3, eviction_policy: 'lru', uptime_seconds: 0 }), { kind: 'stats', stats: { keys: '3', eviction_policy: 'lru', uptime_seconds: '0' } }],
  ],
  error: [
    ...PARSE_ERROR_REPLY_BYTES.slice(1).map((b, i): [Buffer, Reply] => [b, { kind: 'error', reason: PARSE_ERROR_REPLY_REASONS[i + 1]! }]),
    [OUT_OF_MEMORY_REPLY, { kind: 'error', reason: ERROR_REASONS.outOfMemory }],
    [LINE_TOO_LONG_REPLY, { kind: 'error', reason: ERROR_REASONS.lineTooLong }],
    [MAX_CONNECTIONS_REPLY, { kind: 'error', reason: ERROR_REASONS.maxConnections }],
  ],
};

/** The line a reader sees: the bytes before the LF, as the client's framer hands them over. */
const lineOf = (encoded: Buffer | string): string => {
  const bytes = Buffer.from(encoded as Buffer);
  expect(bytes.at(-1)).toBe(0x0a);
  expect(bytes.subarray(0, -1).includes(0x0a)).toBe(false);
  return bytes.toString('utf8', 0, bytes.length - 1);
};

const allSamples = Object.values(ENCODED).flat();

describe('the GET reply encodes its value to base64', () => {
  it('byte for byte as Node does, for every length either side of the inline encoder\'s bound, from a view at any offset, at any offset', () => {
    // The value is read through a view of its page (here one that starts 5 bytes into its
    // memory, so that a wrong base shows); the reply is written into a bigger buffer.
    const memory = Buffer.alloc(4096 + 5);
    let seed = 7;
    for (let i = 0; i < memory.length; i++) memory[i] = (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
    const page = memory.subarray(5);
    const view = new DataView(memory.buffer, memory.byteOffset + 5, page.length);
    for (let len = 0; len <= INLINE_BASE64_MAX_BYTES + 20; len++) {
      for (const start of [0, 1, 2, 3, 1000 + len, page.length - len]) {
        // The target a view at an odd offset into a bigger region, as a pooled small Buffer is.
        const region = Buffer.alloc(valueReplyLength(len) + 12, 0x2a);
        const out = region.subarray(3, region.length - 2);
        const end = writeValueReply(new ReplyTarget(out), 3, view, start, start + len);
        expect(end).toBe(3 + valueReplyLength(len));
        expect(out.toString('latin1', 3, end)).toBe(`VALUE ${page.toString('base64', start, start + len)}\n`);
        expect(out[2]).toBe(0x2a);
        expect(out[end]).toBe(0x2a);
        expect(region.subarray(0, 6).every((b) => b === 0x2a)).toBe(true);
        expect(region.subarray(3 + end).every((b) => b === 0x2a)).toBe(true);
      }
    }
  });
});

describe('every reply kind is encoded and decoded, both in services/protocol/replies.ts', () => {
  it('each kind has an encoder here, and each encoded reply is one line the decoder reads back', () => {
    expect(Object.keys(ENCODED).sort()).toEqual([...REPLY_KINDS].sort());
    for (const [kind, samples] of Object.entries(ENCODED)) {
      expect(samples.length, kind).toBeGreaterThan(0);
      for (const [encoded, reply] of samples) {
        expect(reply.kind).toBe(kind);
        expect(decodeReply(lineOf(encoded)), lineOf(encoded)).toEqual(reply);
      }
    }
    // Every parse error has its reply.
    expect(PARSE_ERROR_REPLY_REASONS.slice(1)).toEqual(PARSE_ERROR_REASONS.slice(1).map((r) => r.replaceAll('_', ' ')));
  });

  it('reads the shapes the SPEC allows besides, and nothing else as a known reply', () => {
    expect(decodeReply('VALUE')).toEqual({ kind: 'value', value: Buffer.alloc(0) }); // stripped by a client
    expect(decodeReply('STATS')).toEqual({ kind: 'stats', stats: {} });
    for (const line of ['', 'ok', 'OK ', 'ERROR', 'ERRORx', 'TTL', 'TTL -2', 'TTL 1.5', 'USAGE', 'USAGE -1', 'STATSx=1', 'PONG!', 'BYE BYE']) {
      expect(decodeReply(line), JSON.stringify(line)).toEqual({ kind: 'unknown', line });
    }
  });
});

describe('the store writes the replies the decoder reads', () => {
  it('one of each, from a real store', async () => {
    const store = await startTestStore();
    const c = await store.client();
    c.send(Buffer.concat([Buffer.from('SET k '), binary.subarray(0, -1), Buffer.from('\nGET k\nGET nope\nSETEX t 5 v\nTTL t\nTTL k\nUSAGE\nSTATS\nPING\nEXPIRE nope 5\nGET k x\nfoo\nQUIT\n')]));
    const lines = await c.lines(13);
    const replies = lines.map((l) => decodeReply(l));
    expect(replies.slice(0, 6)).toEqual([
      { kind: 'ok' },
      { kind: 'value', value: binary.subarray(0, -1) },
      { kind: 'not_found' },
      { kind: 'ok' },
      { kind: 'ttl', seconds: 5 },
      { kind: 'ttl', seconds: -1 },
    ]);
    expect(replies[6]).toEqual({ kind: 'usage', bytes: 'k'.length + binary.length - 1 + 't'.length + 'v'.length });
    expect(replies[7]!.kind).toBe('stats');
    expect(Object.keys((replies[7] as { stats: object }).stats)).toEqual(expect.arrayContaining(['keys', 'usage_bytes', 'max_memory_bytes', 'connections', 'evictions', 'expired', 'hits', 'misses', 'uptime_seconds']));
    expect(replies.slice(8)).toEqual([
      { kind: 'pong' },
      { kind: 'not_found' },
      { kind: 'error', reason: 'wrong number of arguments' },
      { kind: 'error', reason: 'unknown command' },
      { kind: 'bye' },
    ]);
    // Every kind the decoder knows came from the store's encoders.
    expect(new Set(replies.map((r) => r.kind))).toEqual(new Set(REPLY_KINDS));
  });
});

describe('the client library and the CLI read replies with the decoder', () => {
  it('the client: each command takes the kinds it expects and refuses the rest as protocol errors', async () => {
    const results = async (line: string) => {
      const c = new RecordingCommands(line);
      return {
        get: await c.get('k').catch((e: unknown) => e),
        usage: await c.usage().catch((e: unknown) => e),
        ttl: await c.ttl('k').catch((e: unknown) => e),
        stats: await c.stats().catch((e: unknown) => e),
        ping: await c.ping().then(() => 'pong', (e: unknown) => e),
        del: await c.del('k').then(() => 'ok', (e: unknown) => e),
      };
    };
    for (const [encoded, reply] of allSamples) {
      const line = lineOf(encoded);
      const r = await results(line);
      if (reply.kind === 'error') {
        for (const v of Object.values(r)) expect(v).toEqual(new StoreReplyError(reply.reason));
        continue;
      }
      expect(r.get, line).toEqual(reply.kind === 'value' ? reply.value : reply.kind === 'not_found' ? null : expect.any(StoreProtocolError));
      expect(r.usage, line).toEqual(reply.kind === 'usage' ? reply.bytes : expect.any(StoreProtocolError));
      expect(r.ttl, line).toEqual(reply.kind === 'ttl' ? reply.seconds : reply.kind === 'not_found' ? null : expect.any(StoreProtocolError));
      expect(r.stats, line).toEqual(reply.kind === 'stats' ? reply.stats : expect.any(StoreProtocolError));
      expect(r.ping, line).toEqual(reply.kind === 'pong' ? 'pong' : expect.any(StoreProtocolError));
      expect(r.del, line).toEqual(reply.kind === 'ok' ? 'ok' : expect.any(StoreProtocolError));
    }
    expect(await refusal(new RecordingCommands('STATSx=1').stats())).toBeInstanceOf(StoreProtocolError);
  });

  it('the CLI: its JSON and its display follow the decoded reply', () => {
    for (const [encoded, reply] of allSamples) {
      const line = lineOf(encoded);
      const json = replyLineJson(line);
      const shown = displayReply(line, false);
      switch (reply.kind) {
        case 'value':
          expect(json).toEqual(valueJson(reply.value));
          expect(shown).toEqual(reply.value);
          break;
        case 'error':
          expect(json).toEqual({ ok: false, error: reply.reason, kind: 'reply' });
          expect(shown).toBe(`(error) ${reply.reason}`);
          break;
        case 'not_found':
          expect(json).toEqual({ ok: false, notFound: true });
          expect(shown).toBe('(nil)');
          break;
        default:
          expect(json).toEqual(
            reply.kind === 'ok' ? { ok: true } : reply.kind === 'ttl' ? { ok: true, ttl: reply.seconds } : reply.kind === 'usage' ? { ok: true, usage: reply.bytes } : reply.kind === 'stats' ? statsJson(reply.stats) : { ok: true, reply: line },
          );
          expect(shown).toBe(line);
      }
    }
  });
});

describe("the bench's reply scanner", () => {
  it('sorts every encoded reply to GET and SET as the decoder reads it', () => {
    for (const size of [0, 1, 2, 3, 5, 1000]) {
      const samples = [...allSamples, [valueReply(Buffer.alloc(size, 0x61)), { kind: 'value', value: Buffer.alloc(size, 0x61) }] as const];
      for (const expectKind of [EXPECT_GET, EXPECT_SET]) {
        for (const [crlf, chunkBytes] of [[false, Infinity], [true, Infinity], [false, 1], [true, 2], [false, 7]] as const) {
          const scanner = new LineReplyScanner(size);
          scanner.expect = new Uint8Array(samples.length).fill(expectKind);
          const stream = Buffer.concat(samples.map(([encoded]) => {
            const b = Buffer.from(encoded as Buffer);
            return crlf ? Buffer.concat([b.subarray(0, -1), Buffer.from('\r\n')]) : b;
          }));
          // Whole, and in small chunks: a line's end may arrive apart from the rest.
          let done = 0;
          for (let at = 0; at < stream.length; at += Math.min(chunkBytes, stream.length)) done += scanner.feed(stream.subarray(at, at + chunkBytes));
          expect(done).toBe(samples.length);
          const want = { misses: 0, errors: 0, wrong: 0 };
          for (const [encoded] of samples) {
            const reply = decodeReply(lineOf(encoded));
            if (reply.kind === 'error') want.errors++;
            else if (expectKind === EXPECT_GET && reply.kind === 'not_found') want.misses++;
            else if (expectKind === EXPECT_GET ? !(reply.kind === 'value' && reply.value.length === size) : reply.kind !== 'ok') want.wrong++;
          }
          expect({ misses: scanner.misses, errors: scanner.errors, wrong: scanner.wrong }, `size ${size}, ${expectKind === EXPECT_GET ? 'GET' : 'SET'}`).toEqual(want);
        }
      }
    }
  });
});

describe('no module outside services/protocol/ spells a reply line', () => {
  const servicesDir = join(import.meta.dirname, '..', 'services');
  const code = readdirSync(servicesDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.startsWith(`protocol${'/'}`) && !f.startsWith('protocol\\'))
    // Comments may name replies; only code counts.
    .map((f) => ({ file: f, text: readFileSync(join(servicesDir, f), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '') }));

  it('finds the sources', () => {
    expect(code.map((c) => c.file)).toContain(join('client', 'store-commands.ts'));
  });

  it.each([
    ['a whole reply line in a string', /['`](OK|NOT_FOUND|PONG|BYE|VALUE)(\\n)?['`]/],
    ['a reply prefix in a string', /['`"](VALUE|ERROR) /],
    ['a reply read with a pattern', /\/\^(VALUE|ERROR|USAGE|TTL|STATS|NOT_FOUND|PONG|OK|BYE)\b/],
    ['a reply read by its start', /startsWith\(['`"](VALUE|ERROR|USAGE|TTL|STATS)/],
  ])('%s', (_what, pattern) => {
    expect(code.filter((c) => pattern.test(c.text)).map((c) => c.file)).toEqual([]);
  });
});
