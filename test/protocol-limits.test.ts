// The protocol's bounds live in services/protocol/limits.ts only: every check and every
// message at each entry point (store parser, backend, client, CLI, engine) follows the
// constants, and no other module spells a bound of its own.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createBackendApp, type BackendStore } from '../services/backend/backend-app.ts';
import { errorReplies } from '../services/backend/http-replies.ts';
import { keyFromPath } from '../services/backend/key-from-path.ts';
import { StoreArgumentError } from '../services/client/errors.ts';
import { findCommand } from '../services/cli/cli-commands.ts';
import { UsageError } from '../services/cli/usage-error.ts';
import { INVALID_EXPIRE_TIME, INVALID_KEY, OK, ParsedCommand, parseCommand } from '../services/protocol/command-parser.ts';
import { isValidKey } from '../services/protocol/key-rules.ts';
import { LINE_ROOM_BYTES, lineBound, MAX_KEY_BYTES, MAX_TTL_DIGITS, MAX_TTL_SECONDS } from '../services/protocol/limits.ts';
import { commonSettings } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import * as kvEngine from '../services/store/engine/kv-engine.ts';
import { RecordingCommands, refusal } from './helpers/recording-commands.ts';

const TOO_LONG = MAX_TTL_SECONDS + 1;

const parse = (line: string): number => {
  const buf = Buffer.from(line);
  return parseCommand(buf, 0, buf.length, 1024, new ParsedCommand());
};

describe('the TTL bound, from MAX_TTL_SECONDS', () => {
  it('the store parser takes MAX_TTL_SECONDS and refuses one more', () => {
    expect(parse(`SETEX k ${MAX_TTL_SECONDS} v`)).toBe(OK);
    expect(parse(`EXPIRE k ${MAX_TTL_SECONDS}`)).toBe(OK);
    expect(parse(`SETEX k ${TOO_LONG} v`)).toBe(INVALID_EXPIRE_TIME);
    expect(parse(`EXPIRE k ${TOO_LONG}`)).toBe(INVALID_EXPIRE_TIME);
    expect(parse(`EXPIRE k ${'0'.repeat(MAX_TTL_DIGITS)}1`)).toBe(INVALID_EXPIRE_TIME);
  });

  it('the backend takes ?ttl=MAX_TTL_SECONDS, and its 400 for one more names the bound', async () => {
    const sets: (number | undefined)[] = [];
    const store: BackendStore = {
      get: () => Promise.resolve(null),
      del: () => Promise.resolve(),
      set: (_key, _value, ttl) => (sets.push(ttl), Promise.resolve()),
    };
    const app = createBackendApp({ store, logger: createLogger({ name: 'test', level: 'silent' }), maxValueBytes: 64 });
    expect((await request(app).put(`/k?ttl=${MAX_TTL_SECONDS}`).send('v')).status).toBe(204);
    const refused = await request(app).put(`/k?ttl=${TOO_LONG}`).send('v');
    expect(refused.status).toBe(400);
    expect(refused.text).toBe(errorReplies.invalidTtl.body.toString());
    expect(refused.text).toContain(`1 to ${MAX_TTL_SECONDS}`);
    expect(sets).toEqual([MAX_TTL_SECONDS]);
  });

  it('the client sends MAX_TTL_SECONDS and refuses one more with a message naming the bound', async () => {
    const client = new RecordingCommands('OK');
    await client.set('k', 'v', MAX_TTL_SECONDS);
    expect(await client.expire('k', MAX_TTL_SECONDS)).toBe(true);
    for (const err of [await refusal(client.set('k', 'v', TOO_LONG)), await refusal(client.expire('k', TOO_LONG))]) {
      expect(err).toBeInstanceOf(StoreArgumentError);
      expect((err as StoreArgumentError).code).toBe('invalid_seconds');
      expect((err as Error).message).toContain(`1 to ${MAX_TTL_SECONDS}`);
    }
    expect(client.sent).toEqual([`SETEX k ${MAX_TTL_SECONDS} v`, `EXPIRE k ${MAX_TTL_SECONDS}`]);
  });

  it('the CLI takes MAX_TTL_SECONDS, refuses one more as a usage error naming the bound, and its help says it', async () => {
    const store = new RecordingCommands('OK');
    const ctx = { stdoutIsTTY: false, readStdin: () => Promise.resolve(Buffer.alloc(0)) };
    await findCommand('setex')!.run(store, ['k', String(MAX_TTL_SECONDS), 'v'], ctx);
    await findCommand('expire')!.run(store, ['k', String(MAX_TTL_SECONDS)], ctx);
    for (const [name, args] of [['setex', ['k', String(TOO_LONG), 'v']], ['expire', ['k', String(TOO_LONG)]]] as const) {
      const err = await refusal(findCommand(name)!.run(store, args, ctx));
      expect(err, name).toBeInstanceOf(UsageError);
      expect((err as Error).message, name).toContain(`1 to ${MAX_TTL_SECONDS}`);
    }
    expect(store.sent).toEqual([`SETEX k ${MAX_TTL_SECONDS} v`, `EXPIRE k ${MAX_TTL_SECONDS}`]);
    expect(findCommand('setex')!.details).toContain(`1 to ${MAX_TTL_SECONDS} seconds`);
  });

  it('the engine takes MAX_TTL_SECONDS and refuses one more', () => {
    const engine = new kvEngine.KvEngine({ maxMemoryBytes: 1 << 20, evictionPolicy: 'lru' });
    engine.set('k', 'dg==', MAX_TTL_SECONDS);
    expect(engine.ttl('k')).toBe(MAX_TTL_SECONDS);
    expect(() => engine.set('k', 'dg==', TOO_LONG)).toThrow(RangeError);
  });
});

describe('the key bound, from MAX_KEY_BYTES', () => {
  const longest = 'k'.repeat(MAX_KEY_BYTES);
  const tooLong = 'k'.repeat(MAX_KEY_BYTES + 1);

  it('the parser, the shared key rule and the backend path take MAX_KEY_BYTES and refuse one more', () => {
    expect(parse(`GET ${longest}`)).toBe(OK);
    expect(parse(`GET ${tooLong}`)).toBe(INVALID_KEY);
    expect(isValidKey(longest)).toBe(true);
    expect(isValidKey(tooLong)).toBe(false);
    expect(keyFromPath(`/${longest}`)).toEqual({ key: longest });
    expect(keyFromPath(`/${tooLong}`)).toHaveProperty('error');
  });

  it('the backend and client messages name the bound', async () => {
    expect(errorReplies.invalidKey.body.toString()).toContain(`1 to ${MAX_KEY_BYTES} bytes`);
    const err = await refusal(new RecordingCommands('OK').get(tooLong));
    expect((err as StoreArgumentError).code).toBe('invalid_key');
    expect((err as Error).message).toContain(`1 to ${MAX_KEY_BYTES} bytes`);
  });

  it('the engine takes MAX_KEY_BYTES and refuses one more (its key lengths live in a byte per slot)', () => {
    const engine = new kvEngine.KvEngine({ maxMemoryBytes: 1 << 20, evictionPolicy: 'lru' });
    expect(engine.set(longest, 'dg==')).toBe('ok');
    expect(() => engine.set(tooLong, 'dg==')).toThrow(RangeError);
  });
});

describe('the line bound', () => {
  it('is MAX_VALUE_BYTES plus LINE_ROOM_BYTES, room for the longest command head', () => {
    expect(lineBound(1000)).toBe(1000 + LINE_ROOM_BYTES);
    const head = `SETEX ${'k'.repeat(MAX_KEY_BYTES)} ${MAX_TTL_SECONDS} \r`;
    expect(head.length).toBeLessThanOrEqual(LINE_ROOM_BYTES);
    expect(commonSettings.maxValueBytes.description).toContain(`plus ${LINE_ROOM_BYTES}`);
  });
});

describe('no module but services/protocol/limits.ts spells a bound', () => {
  const servicesDir = join(import.meta.dirname, '..', 'services');
  const sources = readdirSync(servicesDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => ({ file: f, text: readFileSync(join(servicesDir, f), 'utf8') }));

  it('finds the sources', () => {
    expect(sources.map((s) => s.file)).toContain(join('protocol', 'limits.ts'));
  });

  it.each([
    ['the TTL bound', /\b(1e9|1_000_000_000|1000000000)\b/, []],
    ['a TTL bound constant', /\b(const|let)\s+MAX_(TTL|SECONDS)\w*\s*=/, []],
    ['a key bound constant', /\b(const|let)\s+MAX_KEY_BYTES\s*=/, []],
    ['the line room', /\+\s*512\b/, []],
    ['the client reply bound', /64\s*\*\s*1024\s*\*\s*1024/, []],
  ] as const)('%s', (_what, pattern, except: readonly string[]) => {
    const spelled = sources.filter((s) => s.file !== join('protocol', 'limits.ts') && !except.includes(s.file) && pattern.test(s.text));
    expect(spelled.map((s) => s.file)).toEqual([]);
  });
});
