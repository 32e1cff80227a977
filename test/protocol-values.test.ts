// What a value may hold is decided once (services/protocol/value-rules.ts): the rule is
// exactly what the store's framer and parser carry, and the backend, the client library
// and the CLI refuse what it refuses, each with its own kind of error and nothing sent.
import fc from 'fast-check';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createBackendApp, type BackendStore } from '../services/backend/backend-app.ts';
import { errorReplies } from '../services/backend/http-replies.ts';
import { StoreArgumentError } from '../services/client/errors.ts';
import { findCommand } from '../services/cli/cli-commands.ts';
import { UsageError } from '../services/cli/usage-error.ts';
import { OK, ParsedCommand, parseCommand } from '../services/protocol/command-parser.ts';
import { LineFramer } from '../services/protocol/line-framer.ts';
import { httpBodyProblem, VALUE_PROBLEM_MESSAGES, valueProblem, type ValueProblem } from '../services/protocol/value-rules.ts';
import { createLogger } from '../services/shared/logger.ts';
import { RecordingCommands, refusal } from './helpers/recording-commands.ts';

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');

/** The value the store would store for `SET k <value>` sent as one line, or undefined when it reads something else. */
function storedBySet(value: Buffer): Buffer | undefined {
  const lines: Buffer[] = [];
  const framer = new LineFramer(1 << 16, {
    onLine: (buf, start, end) => void lines.push(Buffer.from(buf.subarray(start, end))),
    onOverflow: () => {},
  });
  framer.push(Buffer.concat([bytes('SET k '), value, bytes('\n')]));
  if (lines.length !== 1) return undefined;
  const p = new ParsedCommand();
  if (parseCommand(lines[0]!, 0, lines[0]!.length, 1 << 16, p) !== OK) return undefined;
  return lines[0]!.subarray(p.valueStart, p.valueEnd);
}

// Each problem, and values that travel although they hold a CR or are empty.
const REFUSED: readonly [string, ValueProblem][] = [
  ['a\nb', 'line_feed'],
  ['\n', 'line_feed'],
  ['ends\r\n', 'line_feed'],
  ['\r', 'trailing_carriage_return'],
  ['ends\r', 'trailing_carriage_return'],
];
const CARRIED = ['', 'v', 'a\rb', '\rleading', 'two\r\rinside', ' spaces '];

describe('the value rule', () => {
  it('names each problem', () => {
    for (const [value, problem] of REFUSED) expect(valueProblem(bytes(value)), JSON.stringify(value)).toBe(problem);
    for (const value of CARRIED) expect(valueProblem(bytes(value)), JSON.stringify(value)).toBeUndefined();
  });

  it('accepts exactly the values a SET line stores byte for byte', () => {
    const byteArb = fc.constantFrom(0x0a, 0x0d, 0x20, 0x00, 0x41, 0xff);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 8 }).chain((head) => fc.array(byteArb, { maxLength: 4 }).map((tail) => Buffer.from([...head, ...tail]))), (value) => {
        const stored = storedBySet(value);
        const exact = stored !== undefined && stored.equals(value);
        return exact === (valueProblem(value) === undefined);
      }),
      { numRuns: 2000 },
    );
  });

  it('the backend refuses, besides, a CR anywhere (SPEC §2)', () => {
    for (const [value, problem] of REFUSED) expect(httpBodyProblem(bytes(value))).toBe(problem);
    expect(httpBodyProblem(bytes('a\rb'))).toBe('carriage_return');
    expect(httpBodyProblem(bytes('\rleading'))).toBe('carriage_return');
    expect(httpBodyProblem(bytes('v'))).toBeUndefined();
    expect(httpBodyProblem(bytes(''))).toBeUndefined();
  });
});

describe('each entry point refuses what the rule refuses, and sends nothing', () => {
  it('the backend: 400, the store not asked', async () => {
    const sets: Buffer[] = [];
    const store: BackendStore = {
      get: () => Promise.resolve(null),
      del: () => Promise.resolve(),
      set: (_key, value) => (sets.push(Buffer.from(value)), Promise.resolve()),
    };
    const app = createBackendApp({ store, logger: createLogger({ name: 'test', level: 'silent' }), maxValueBytes: 64 });
    for (const body of [...REFUSED.map(([v]) => v), 'a\rb']) {
      const res = await request(app).put('/k').set('Content-Type', 'application/octet-stream').send(bytes(body));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.text).toBe(errorReplies.lineBreakInValue.body.toString());
    }
    expect(sets).toEqual([]);
    expect((await request(app).put('/k').set('Content-Type', 'application/octet-stream').send(bytes('v'))).status).toBe(204);
    expect(sets).toEqual([bytes('v')]);
  });

  it('the client library: StoreArgumentError invalid_value naming the problem; a CR inside is sent', async () => {
    const client = new RecordingCommands('OK');
    for (const [value, problem] of REFUSED) {
      for (const given of [value, bytes(value)]) {
        const err = await refusal(client.set('k', given));
        expect(err, JSON.stringify(value)).toBeInstanceOf(StoreArgumentError);
        expect((err as StoreArgumentError).code).toBe('invalid_value');
        expect((err as Error).message).toBe(`invalid value: ${VALUE_PROBLEM_MESSAGES[problem]}`);
      }
    }
    expect(client.sent).toEqual([]);
    await client.set('k', 'a\rb');
    await client.set('k', bytes('a\rb'), 5);
    expect(client.sent).toEqual(['SET k a\rb', 'SETEX k 5 a\rb']);
  });

  it('the CLI: a usage error naming the problem, from the arguments or stdin; a CR inside is sent', async () => {
    const store = new RecordingCommands('OK');
    const stdin = (data: string) => ({ stdoutIsTTY: false, readStdin: () => Promise.resolve(bytes(data)) });
    const cases: [string[], string, ValueProblem][] = [
      [['set', 'k', 'a\nb'], '', 'line_feed'],
      [['set', 'k', 'ends\r'], '', 'trailing_carriage_return'],
      [['setex', 'k', '5', 'ends', 'with\r'], '', 'trailing_carriage_return'],
      [['set', 'k', '-'], 'two\nlines\n', 'line_feed'],
      // One trailing line break is dropped from stdin, so a CR before it is left at the end.
      [['set', 'k', '-'], 'ends\r\r\n', 'trailing_carriage_return'],
      [['set', 'k', '-'], 'ends\r', 'trailing_carriage_return'],
    ];
    for (const [[name, ...args], input, problem] of cases) {
      const err = await refusal(findCommand(name!)!.run(store, args, stdin(input)));
      expect(err, JSON.stringify(args)).toBeInstanceOf(UsageError);
      expect((err as Error).message).toContain(VALUE_PROBLEM_MESSAGES[problem]);
    }
    expect(store.sent).toEqual([]);
    await findCommand('set')!.run(store, ['k', 'a\rb'], stdin(''));
    await findCommand('set')!.run(store, ['k', '-'], stdin('a\rb\r\n'));
    expect(store.sent).toEqual(['SET k a\rb', 'SET k a\rb']);
  });
});
