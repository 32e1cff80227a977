// Fuzzing of the HTTP backend: random methods, paths (plain, percent-encoded, broken
// encodings, raw high bytes, absolute-form), queries and bodies (CR, LF, NUL, binary,
// over the size limit, chunked) against the real app and client pool, talking to a fake
// store that records every line it receives. For each request a reference derived from
// SPEC §2 says which single store command it may produce, byte for byte, and its status:
// a request never produces a line it should not, never more than one, and every line the
// store sees is one well-formed command built from that request alone. A second app with
// bearer tokens takes random Authorization headers: a refused one reaches no store line.
import { createServer, request as httpRequest, type Server } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendApp } from '../services/backend/backend-app.ts';
import { BearerAuth } from '../services/backend/bearer-auth.ts';
import { parseTokens } from '../services/config/token-file.ts';
import { StorePool } from '../services/client/index.ts';
import { COMMAND_NAMES, OK, ParsedCommand, parseCommand } from '../services/protocol/command-parser.ts';
import { listen } from '../services/shared/listen.ts';
import { createLogger } from '../services/shared/logger.ts';
import { startFakeStore, type FakeStore } from './helpers/fake-store.ts';
import { refValidKey } from './helpers/reference-key-rule.ts';

const MAX_VALUE_BYTES = 64;
const ALLOWED = new Set(['GET', 'HEAD', 'PUT', 'POST', 'DELETE']);

/** Bounds a property (shrinking included) when it fails, so a failure reports instead of running on. */
const limits = { plugins: [fc.interruptAfterTimeLimit(15_000)] };

// ---------------------------------------------------------------- a recording fake store

/** Keyspace of the fake store, by key bytes (hex); values as raw bytes. */
const kept = new Map<string, Buffer>();
let fake: FakeStore;
let pool: StorePool;
let server: Server;
let port: number;
/** The same app with BACKEND_TOKENS_FILE's check, over the same store. */
let authServer: Server;
let authPort: number;
const READ_TOKEN = 'fuzz-read-token-0123456789';
const WRITE_TOKEN = 'fuzz+write/token_0123456789==';

function answer(): string {
  // The raw bytes of the line being handled are the last ones recorded.
  const raw = fake.receivedRaw.at(-1)!;
  const p = new ParsedCommand();
  if (parseCommand(raw, 0, raw.length, MAX_VALUE_BYTES, p) !== OK) return 'ERROR unexpected line';
  const key = raw.subarray(p.keyStart, p.keyEnd).toString('hex');
  switch (COMMAND_NAMES[p.command]) {
    case 'SET':
    case 'SETEX':
      kept.set(key, Buffer.from(raw.subarray(p.valueStart, p.valueEnd)));
      return 'OK';
    case 'GET': {
      const v = kept.get(key);
      return v === undefined ? 'NOT_FOUND' : `VALUE ${v.toString('base64')}`;
    }
    case 'DELETE':
      kept.delete(key);
      return 'OK';
    default:
      return 'ERROR unexpected command';
  }
}

beforeAll(async () => {
  fake = await startFakeStore(() => answer());
  pool = new StorePool({ host: '127.0.0.1', port: fake.port, size: 2, timeoutMs: 5000 });
  const app = createBackendApp({ store: pool, logger: createLogger({ name: 'test', level: 'silent' }), maxValueBytes: MAX_VALUE_BYTES });
  server = createServer(app);
  port = await listen(server, 0, '127.0.0.1');
  const auth = new BearerAuth(parseTokens(`read ${READ_TOKEN}\nwrite ${WRITE_TOKEN}\n`, 'fuzz', 'BACKEND_TOKENS_FILE'));
  authServer = createServer(createBackendApp({ store: pool, logger: createLogger({ name: 'test', level: 'silent' }), maxValueBytes: MAX_VALUE_BYTES, auth }));
  authPort = await listen(authServer, 0, '127.0.0.1');
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  authServer?.closeAllConnections();
  await new Promise((r) => authServer?.close(r));
  pool?.destroy();
  await fake?.close();
});

// ---------------------------------------------------------------- requests

interface Req {
  method: string;
  path: string;
  body: Buffer | undefined;
  /** Send the body in two writes (chunked transfer encoding) instead of with a Content-Length. */
  chunked: boolean;
  /** An Authorization header, for the app with tokens. */
  authorization?: string | undefined;
}

interface Res {
  status: number;
  body: Buffer;
  /** Set by the app on every response it writes: absent when Node's HTTP parser refused the request first. */
  requestId: string | undefined;
  wwwAuthenticate: string | undefined;
}

/** One request with the path sent as given (latin1 bytes on the wire); never rejects. */
function send(r: Req, to = port): Promise<Res | Error> {
  return new Promise((resolve) => {
    let req;
    try {
      // Bodies are always framed: Node's client sends a GET body with neither Content-Length nor
      // chunked encoding, which the server would read as the start of a second, garbage request.
      const headers: Record<string, string> =
        r.body === undefined ? {} : r.chunked ? { 'Transfer-Encoding': 'chunked' } : { 'Content-Length': String(r.body.length) };
      if (r.authorization !== undefined) headers.Authorization = r.authorization;
      req = httpRequest({ host: '127.0.0.1', port: to, method: r.method, path: r.path, headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body: Buffer.concat(chunks), requestId: res.headers['x-request-id'] as string | undefined, wwwAuthenticate: res.headers['www-authenticate'] }),
        );
        res.on('error', resolve);
      });
    } catch (err) {
      return resolve(err as Error); // a path Node's client refuses to send
    }
    req.on('error', resolve);
    if (r.body === undefined) return req.end();
    if (r.chunked) {
      req.write(r.body.subarray(0, r.body.length >> 1));
      req.end(r.body.subarray(r.body.length >> 1));
    } else {
      req.end(r.body);
    }
  });
}

const hex2 = (b: number) => b.toString(16).padStart(2, '0');

/** A piece of a path segment: plain characters, an encoded byte, a broken encoding, a raw high byte. */
const pieceArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~:@!$&'()*+,;=-]{1,6}$/) },
  { weight: 2, arbitrary: fc.constantFrom('"', '<', '>', '\\', '^', '`', '{', '|', '}') }, // raw, and valid key bytes
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 255 }).chain((b) => fc.constantFrom(`%${hex2(b)}`, `%${hex2(b).toUpperCase()}`)) },
  { weight: 2, arbitrary: fc.constantFrom('%20', '%0A', '%0D', '%0D%0A', '%00', '%25', '%2F', '%3F', '%7F', '%C3%A9', '%E2%82%AC', '%F0%9F%94%91', '%ED%A0%80', '%C0%AF', '%FF') },
  { weight: 1, arbitrary: fc.constantFrom('%', '%G1', '%4', '%%', '%0', '%zz') },
  // A raw byte over 0x7F (Node's client sends the target as latin1): Node's parser refuses it.
  { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)) },
);

const segmentArb = fc.oneof(
  { weight: 10, arbitrary: fc.array(pieceArb, { minLength: 1, maxLength: 5 }).map((p) => p.join('')) },
  // Half the keys are valid whatever their spelling, so the store side sees plenty of commands.
  { weight: 10, arbitrary: fc.array(fc.oneof(fc.stringMatching(/^[A-Za-z0-9._~-]{1,6}$/), fc.constantFrom('%41', '%c3%a9', '%E2%82%AC', '"', '|', '%7E')), { minLength: 1, maxLength: 4 }).map((p) => p.join('')) },
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.integer({ min: 248, max: 252 }).map((n) => 'k'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 82, max: 86 }).map((n) => '%E2%82%AC'.repeat(n)) }, // 3 bytes each: 246 to 258
);

const queryArb = fc.oneof(
  fc.constant(''),
  fc.constantFrom('?ttl=5', '?ttl=1', '?ttl=1000000000', '?ttl=1000000001', '?ttl=0', '?ttl=', '?ttl=-1', '?ttl=1.5', '?ttl=5&ttl=6', '?ttl=%35', '?ttl=5%0ASET', '?x=1', '?', '?ttl=99999999999999999999'),
  fc.integer({ min: 0, max: 2_000_000_000 }).map((n) => `?ttl=${n}`),
);

const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 10, arbitrary: fc.tuple(segmentArb, fc.constantFrom('', '/', '/x', '/a/b', '//'), queryArb).map(([s, rest, q]) => `/${s}${rest}${q}`) },
  { weight: 1, arbitrary: fc.constantFrom('/', '//k', '//', '/?ttl=5', '/%2F', '/./k', '/../k') },
  { weight: 1, arbitrary: fc.tuple(segmentArb, queryArb).map(([s, q]) => `http://example.test/${s}${q}`) },
);

const bodyArb: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)) },
  { weight: 3, arbitrary: fc.array(fc.constantFrom(0x61, 0x20, 0x0d, 0x0a, 0x00, 0xff, 0x53), { maxLength: 20 }).map((a) => Buffer.from(a)) },
  { weight: 2, arbitrary: fc.constantFrom('SET owned 1', 'x\r\nDELETE victim', 'x\nSET owned 1', 'v\r', '\n', '', ' ', 'GET k').map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_VALUE_BYTES - 2, max: MAX_VALUE_BYTES + 2 }).map((n) => Buffer.alloc(n, 0x76)) },
);

const reqArb: fc.Arbitrary<Req> = fc.record({
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('GET', 'HEAD', 'PUT', 'POST', 'DELETE') },
    { weight: 1, arbitrary: fc.constantFrom('PATCH', 'OPTIONS', 'PROPFIND', 'get', 'put') },
  ),
  path: pathArb,
  body: fc.option(bodyArb, { nil: undefined }),
  chunked: fc.boolean(),
});

// ---------------------------------------------------------------- the reference

interface Expected {
  status: number;
  /** The one line the store must receive, or none. */
  line?: Buffer;
}

/** Percent-decodes bytes (the request target arrives as latin1 characters); null on a broken escape. */
function percentDecode(segment: string): Buffer | null {
  const bytes: number[] = [];
  for (let i = 0; i < segment.length; i++) {
    if (segment[i] === '%') {
      const hex = segment.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(segment.charCodeAt(i));
    }
  }
  return Buffer.from(bytes);
}

/** What SPEC §2 says this request gets, and the store line it maps to. */
function reference(r: Req): Expected {
  const method = r.method.toUpperCase(); // Node's client sends the method upper-cased
  let target = r.path;
  if (!target.startsWith('/')) target = new URL(target).pathname + (target.includes('?') ? target.slice(target.indexOf('?')) : '');
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  const segment = path.slice(1).split('/')[0]!;
  if (segment === '') return { status: 400 };
  if (!ALLOWED.has(method)) return { status: 405 };
  const key = percentDecode(segment);
  if (key === null || !refValidKey(key)) return { status: 400 };
  if (method === 'GET' || method === 'HEAD') {
    return { status: kept.has(key.toString('hex')) ? 200 : 404, line: Buffer.concat([Buffer.from('GET '), key]) };
  }
  if (method === 'DELETE') return { status: 204, line: Buffer.concat([Buffer.from('DELETE '), key]) };
  const ttls = new URLSearchParams(q === -1 ? '' : r.path.slice(r.path.indexOf('?') + 1)).getAll('ttl');
  let ttl: number | undefined;
  if (ttls.length > 0) {
    if (ttls.length > 1 || !/^\d+$/.test(ttls[0]!)) return { status: 400 };
    ttl = Number(ttls[0]);
    if (!(ttl >= 1 && ttl <= 1e9)) return { status: 400 };
  }
  const body = r.body ?? Buffer.alloc(0);
  if (body.length > MAX_VALUE_BYTES) return { status: 413 };
  if (body.includes(0x0a) || body.includes(0x0d)) return { status: 400 };
  const head = ttl === undefined ? Buffer.from('SET ') : Buffer.from('SETEX ');
  const line = Buffer.concat([head, key, Buffer.from(ttl === undefined ? ' ' : ` ${ttl} `), body]);
  return { status: 204, line };
}

// ---------------------------------------------------------------- the property

/** How the fuzzed requests ended, so the test can show that most reached the app and the store. */
const outcomes = { app: 0, refusedByHttp: 0, storeCommands: 0, authRefused: 0 };

async function check(r: Req, to = port, refusal?: number): Promise<void> {
  const seen = fake.received.length;
  const want: Expected = refusal === undefined ? reference(r) : { status: refusal };
  const before = want.line && want.status === 200 ? kept.get(want.line.subarray(4).toString('hex')) : undefined;
  const res = await send(r, to);
  const label = JSON.stringify({ ...r, body: r.body?.toString('latin1') });
  const lines = fake.receivedRaw.slice(seen);

  // Every line the store saw is one well-formed command; at most one per request.
  for (const line of lines) {
    expect(parseCommand(line, 0, line.length, MAX_VALUE_BYTES, new ParsedCommand()), `${label}: malformed line ${line.toString('latin1')}`).toBe(OK);
  }
  if (res instanceof Error || res.requestId === undefined) {
    // Refused by Node's HTTP client or server parser before the app (a raw byte it does
    // not take in a request target, for one): then nothing reached the store.
    expect(lines, `${label}: ${res instanceof Error ? res.message : res.status}`).toEqual([]);
    if (!(res instanceof Error)) expect(res.status, label).toBe(400);
    outcomes.refusedByHttp++;
    return;
  }
  outcomes.app++;
  if (want.line) outcomes.storeCommands++;
  expect(lines.map((l) => l.toString('hex')), label).toEqual(want.line ? [want.line.toString('hex')] : []);
  expect(res.status, label).toBe(want.status);
  if (want.status === 200 && r.method.toUpperCase() === 'GET') expect(res.body.equals(before!), label).toBe(true);
  if (r.method.toUpperCase() === 'HEAD') expect(res.body.length, label).toBe(0);
  if (refusal !== undefined) {
    outcomes.authRefused++;
    expect(res.wwwAuthenticate, label).toMatch(/^Bearer realm="kvbackend"/);
    // Nothing presented is echoed (a fragment under 8 characters may occur in the fixed text by chance).
    const presented = (r.authorization ?? '').slice(7);
    for (const echo of [READ_TOKEN, WRITE_TOKEN, ...(presented.length >= 8 ? [presented] : [])]) expect(res.body.toString('latin1') + res.wwwAuthenticate, label).not.toContain(echo);
  }
}

// ---------------------------------------------------------------- Authorization headers

/** A token of the file changed slightly: one character dropped, added, or of another case, or cut in two. */
const nearTokenArb = fc.tuple(fc.constantFrom(READ_TOKEN, WRITE_TOKEN), fc.nat(40), fc.constantFrom('drop', 'add', 'case', 'prefix', 'suffix')).map(([t, at, how]) => {
  const i = at % t.length;
  if (how === 'drop') return t.slice(0, i) + t.slice(i + 1);
  if (how === 'add') return `${t.slice(0, i)}x${t.slice(i)}`;
  if (how === 'case') return t.slice(0, i) + (t[i] === t[i]!.toUpperCase() ? t[i]!.toLowerCase() : t[i]!.toUpperCase()) + t.slice(i + 1) + (/[a-z]/i.test(t[i]!) ? '' : 'x');
  return how === 'prefix' ? t.slice(0, i) : t.slice(i + 1);
});

const authorizationArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'BeArEr'), fc.constantFrom(' ', '  ', '   '), fc.constantFrom(READ_TOKEN, WRITE_TOKEN), fc.constantFrom('', ' ', '\t', '  '))
      .map(([scheme, gap, token, tail]) => `${scheme}${gap}${token}${tail}`),
  },
  { weight: 3, arbitrary: nearTokenArb.map((t) => `Bearer ${t}`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      `Basic ${Buffer.from(`user:${WRITE_TOKEN}`).toString('base64')}`,
      `Token ${WRITE_TOKEN}`,
      `Bearer${WRITE_TOKEN}`,
      `Bearer\t${WRITE_TOKEN}`,
      `Bearer ${WRITE_TOKEN} ${READ_TOKEN}`,
      `Bearer ${WRITE_TOKEN},Bearer ${READ_TOKEN}`,
      `${WRITE_TOKEN}`,
      'Bearer',
      'Bearer ',
      '',
      `Bearer "${WRITE_TOKEN}"`,
    ),
  },
  // Any bytes Node's client lets through in a header (latin1), and some it refuses.
  { weight: 2, arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)), maxLength: 40 }).map((t) => `Bearer ${t}`) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
);

/** SPEC §8's answer to a header as the server receives it (its value stripped of leading and trailing spaces and tabs). */
function referenceRefusal(authorization: string | undefined, method: string): number | undefined {
  const value = authorization?.replace(/^[ \t]+|[ \t]+$/g, '');
  const m = value === undefined ? null : /^bearer (.*)$/is.exec(value);
  const token = m?.[1]!.trim();
  if (!token) return 401;
  if (token !== READ_TOKEN && token !== WRITE_TOKEN) return 401;
  const m2 = method.toUpperCase();
  if (token === READ_TOKEN && m2 !== 'GET' && m2 !== 'HEAD') return 403;
  return undefined;
}

describe('the backend under random requests', () => {
  it('maps each request to at most one well-formed store command, built from that request alone', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(reqArb, { minLength: 1, maxLength: 8 }), async (reqs) => {
        for (const r of reqs) await check(r);
      }),
      { ...limits, numRuns: 150 },
    );
    console.log(`fuzz-backend: ${outcomes.app} requests answered by the app (${outcomes.storeCommands} with a store command), ${outcomes.refusedByHttp} refused by Node's HTTP layer`);
    // The generators aim at the edges, but enough requests must be valid for the store side to be tested.
    expect(outcomes.storeCommands).toBeGreaterThan(outcomes.app / 3);
  });

  it('keys that decode to the same bytes are the same key, and binary values come back byte for byte', async () => {
    // Mixed spellings of one key (%41 and A, %c3%a9 and %C3%A9), and random values: a GET through
    // any spelling returns the last value written through any other.
    const spelling = fc.constantFrom('/A%c3%a9', '/%41%C3%A9', '/A%C3%a9/ignored', '/%41%c3%A9?ttl=3');
    const value = fc.uint8Array({ maxLength: MAX_VALUE_BYTES }).map((a) => Buffer.from(a.map((b) => (b === 0x0a || b === 0x0d ? 0x20 : b))));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(spelling, value, spelling), { minLength: 1, maxLength: 5 }), async (steps) => {
        for (const [put, v, get] of steps) {
          await check({ method: 'PUT', path: put, body: v, chunked: v.length % 2 === 0 });
          const res = await send({ method: 'GET', path: get, body: undefined, chunked: false });
          expect(res).not.toBeInstanceOf(Error);
          expect((res as Res).status).toBe(200);
          expect((res as Res).body.toString('hex')).toBe(v.toString('hex'));
        }
      }),
      { ...limits, numRuns: 40 },
    );
  });

  it('with tokens: a missing, unknown or near token is 401 and a read token writing 403, with no store line; a right one is served as without tokens', async () => {
    const before = { ...outcomes };
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(reqArb, authorizationArb), { minLength: 1, maxLength: 8 }), async (pairs) => {
        for (const [r, authorization] of pairs) {
          const withAuth = { ...r, authorization };
          await check(withAuth, authPort, referenceRefusal(authorization, r.method));
        }
      }),
      { ...limits, numRuns: 150 },
    );
    const served = outcomes.app - before.app - (outcomes.authRefused - before.authRefused);
    console.log(`fuzz-backend with tokens: ${outcomes.authRefused - before.authRefused} refused for their token, ${served} served, ${outcomes.refusedByHttp - before.refusedByHttp} refused by Node's HTTP layer`);
    // Both sides of the check must be exercised.
    expect(outcomes.authRefused - before.authRefused).toBeGreaterThan(100);
    expect(served).toBeGreaterThan(50);
  });
});
