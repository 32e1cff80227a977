import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COMMAND_NAMES, OK, PARSE_ERROR_REASONS, ParsedCommand, parseCommand,
} from '../services/protocol/command-parser.ts';
import { PARSE_ERROR_REPLIES } from '../services/protocol/replies.ts';

interface Parsed {
  command: string;
  error?: string;
  key?: string;
  value?: string;
  seconds?: number;
}

/** Parses `line` placed in the middle of a larger buffer, so offsets are exercised. */
function parse(line: string | Buffer, maxValueBytes = 1024): Parsed {
  const bytes = typeof line === 'string' ? Buffer.from(line, 'latin1') : line;
  const buf = Buffer.concat([Buffer.from('JUNK '), bytes, Buffer.from(' JUNK')]);
  const out = new ParsedCommand();
  const code = parseCommand(buf, 5, 5 + bytes.length, maxValueBytes, out);
  const command = COMMAND_NAMES[out.command]!;
  if (code !== OK) return { command, error: PARSE_ERROR_REASONS[code] };
  const r: Parsed = { command };
  if (['GET', 'DELETE', 'TTL', 'SET', 'SETEX', 'EXPIRE'].includes(command)) r.key = buf.toString('latin1', out.keyStart, out.keyEnd);
  if (command === 'SET' || command === 'SETEX') r.value = buf.toString('latin1', out.valueStart, out.valueEnd);
  if (command === 'SETEX' || command === 'EXPIRE') r.seconds = out.seconds;
  return r;
}

const err = (command: string, error: string): Parsed => ({ command, error });

describe('parseCommand: names', () => {
  it.each([
    ['', err('UNKNOWN', 'empty_command')],
    [' ', err('UNKNOWN', 'unknown_command')],
    ['    ', err('UNKNOWN', 'unknown_command')],
    [' GET k', err('UNKNOWN', 'unknown_command')],
    ['FOO', err('UNKNOWN', 'unknown_command')],
    ['FOO k v', err('UNKNOWN', 'unknown_command')],
    ['GE k', err('UNKNOWN', 'unknown_command')],
    ['GETS k', err('UNKNOWN', 'unknown_command')],
    ['SETEXX k 1 v', err('UNKNOWN', 'unknown_command')],
    ['DELETES k', err('UNKNOWN', 'unknown_command')],
    ['DELETEKEY', err('UNKNOWN', 'unknown_command')],
    ['G\x05T k', err('UNKNOWN', 'unknown_command')],
    ['GET\tk', err('UNKNOWN', 'unknown_command')],
    ['\xff\xfe', err('UNKNOWN', 'unknown_command')],
  ])('%j → %j', (line, expected) => expect(parse(line)).toEqual(expected));

  it.each(['get', 'GET', 'Get', 'gEt'])('%s is GET (case-insensitive)', (name) => {
    expect(parse(`${name} k`)).toEqual({ command: 'GET', key: 'k' });
  });

  it.each(['SET', 'GET', 'DELETE', 'USAGE', 'QUIT', 'PING', 'SETEX', 'EXPIRE', 'TTL', 'STATS'])('%s is known in any case', (name) => {
    for (const variant of [name, name.toLowerCase(), name[0] + name.slice(1).toLowerCase()]) {
      expect(parse(variant).command).toBe(name);
    }
  });
});

describe('parseCommand: arguments', () => {
  it.each([
    // one key
    ['GET k', { command: 'GET', key: 'k' }],
    ['GET', err('GET', 'wrong_number_of_arguments')],
    ['GET ', err('GET', 'invalid_key')],
    ['GET  k', err('GET', 'invalid_key')],
    ['GET k x', err('GET', 'wrong_number_of_arguments')],
    ['GET k ', err('GET', 'wrong_number_of_arguments')],
    ['GET a\x01b', err('GET', 'invalid_key')],
    ['GET a\x7fb', err('GET', 'invalid_key')],
    ['GET a\rb', err('GET', 'invalid_key')],
    ['GET \xff', err('GET', 'invalid_key')],
    ['DELETE k', { command: 'DELETE', key: 'k' }],
    ['DELETE', err('DELETE', 'wrong_number_of_arguments')],
    ['DELETE k k', err('DELETE', 'wrong_number_of_arguments')],
    ['TTL k', { command: 'TTL', key: 'k' }],
    ['TTL', err('TTL', 'wrong_number_of_arguments')],
    ['TTL  k', err('TTL', 'invalid_key')],
    // SET: the value is everything after the space that follows the key
    ['SET k v', { command: 'SET', key: 'k', value: 'v' }],
    ['SET k ', { command: 'SET', key: 'k', value: '' }],
    ['SET k  v', { command: 'SET', key: 'k', value: ' v' }],
    ['SET k v w  x ', { command: 'SET', key: 'k', value: 'v w  x ' }],
    ['SET k a\rb\x00\xff', { command: 'SET', key: 'k', value: 'a\rb\x00\xff' }],
    ['SET', err('SET', 'wrong_number_of_arguments')],
    ['SET ', err('SET', 'wrong_number_of_arguments')],
    ['SET k', err('SET', 'wrong_number_of_arguments')],
    ['SET  v', err('SET', 'invalid_key')],
    ['SET k\x00 v', err('SET', 'invalid_key')],
    // SETEX
    ['SETEX k 10 v', { command: 'SETEX', key: 'k', seconds: 10, value: 'v' }],
    ['SETEX k 10 ', { command: 'SETEX', key: 'k', seconds: 10, value: '' }],
    ['SETEX k 1 a b', { command: 'SETEX', key: 'k', seconds: 1, value: 'a b' }],
    ['setex k 010 v', { command: 'SETEX', key: 'k', seconds: 10, value: 'v' }],
    ['SETEX k 1000000000 v', { command: 'SETEX', key: 'k', seconds: 1_000_000_000, value: 'v' }],
    ['SETEX', err('SETEX', 'wrong_number_of_arguments')],
    ['SETEX k', err('SETEX', 'wrong_number_of_arguments')],
    ['SETEX k 10', err('SETEX', 'wrong_number_of_arguments')],
    ['SETEX  10 v', err('SETEX', 'invalid_key')],
    ['SETEX k 0 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k 1000000001 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k 99999999999 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k -1 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k +1 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k 1.5 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k 1e3 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX k  5 v', err('SETEX', 'invalid_expire_time')],
    ['SETEX \x01 x v', err('SETEX', 'invalid_key')],
    // EXPIRE
    ['EXPIRE k 5', { command: 'EXPIRE', key: 'k', seconds: 5 }],
    ['EXPIRE k', err('EXPIRE', 'wrong_number_of_arguments')],
    ['EXPIRE', err('EXPIRE', 'wrong_number_of_arguments')],
    ['EXPIRE k 5 x', err('EXPIRE', 'wrong_number_of_arguments')],
    ['EXPIRE k 5 ', err('EXPIRE', 'wrong_number_of_arguments')],
    ['EXPIRE k ', err('EXPIRE', 'invalid_expire_time')],
    ['EXPIRE k x', err('EXPIRE', 'invalid_expire_time')],
    ['EXPIRE k 0', err('EXPIRE', 'invalid_expire_time')],
    ['EXPIRE  5', err('EXPIRE', 'invalid_key')],
    // no arguments
    ['USAGE', { command: 'USAGE' }],
    ['PING', { command: 'PING' }],
    ['QUIT', { command: 'QUIT' }],
    ['STATS', { command: 'STATS' }],
    ['PING ', err('PING', 'wrong_number_of_arguments')],
    ['USAGE x', err('USAGE', 'wrong_number_of_arguments')],
    ['QUIT now', err('QUIT', 'wrong_number_of_arguments')],
    ['STATS all', err('STATS', 'wrong_number_of_arguments')],
  ] as [string, Parsed][])('%j → %j', (line, expected) => expect(parse(line)).toEqual(expected));
});

describe('parseCommand: keys and values', () => {
  it('accepts keys of 1 to 250 bytes, multi-byte UTF-8 included', () => {
    expect(parse(`GET ${'a'.repeat(250)}`)).toEqual({ command: 'GET', key: 'a'.repeat(250) });
    expect(parse(`GET ${'a'.repeat(251)}`)).toEqual(err('GET', 'invalid_key'));
    const utf8 = Buffer.from('GET clé-ключ-🔑', 'utf8');
    expect(parse(utf8).key).toBe(Buffer.from('clé-ключ-🔑', 'utf8').toString('latin1'));
    // 125 two-byte characters = 250 bytes; one more is 252
    expect(parse(Buffer.from(`GET ${'é'.repeat(125)}`, 'utf8')).error).toBeUndefined();
    expect(parse(Buffer.from(`GET ${'é'.repeat(126)}`, 'utf8')).error).toBe('invalid_key');
  });

  it('a value of exactly MAX_VALUE_BYTES is accepted, one byte more is too large', () => {
    expect(parse('SET k 1234', 4)).toEqual({ command: 'SET', key: 'k', value: '1234' });
    expect(parse('SET k 12345', 4)).toEqual(err('SET', 'value_too_large'));
    expect(parse('SETEX k 5 1234', 4).error).toBeUndefined();
    expect(parse('SETEX k 5 12345', 4)).toEqual(err('SETEX', 'value_too_large'));
    expect(parse('SET k ', 0)).toEqual({ command: 'SET', key: 'k', value: '' });
  });

  it('a bad key or bad seconds is reported before a value that is too large', () => {
    expect(parse('SET \x01 12345', 4).error).toBe('invalid_key');
    expect(parse('SETEX k 0 12345', 4).error).toBe('invalid_expire_time');
  });

  it('the value is any bytes but LF, taken byte for byte', () => {
    const bytes = Buffer.from([0x53, 0x45, 0x54, 0x20, 0x6b, 0x20, 0x00, 0xff, 0x80, 0x0d, 0x20, 0xc3]);
    expect(parse(bytes)).toEqual({ command: 'SET', key: 'k', value: '\x00\xff\x80\r \xc3' });
  });

  it('one ParsedCommand can be reused line after line', () => {
    const out = new ParsedCommand();
    const a = Buffer.from('SETEX key 7 value');
    expect(parseCommand(a, 0, a.length, 100, out)).toBe(OK);
    const g = Buffer.from('GET other');
    expect(parseCommand(g, 0, g.length, 100, out)).toBe(OK);
    expect(COMMAND_NAMES[out.command]).toBe('GET');
    expect(g.toString('latin1', out.keyStart, out.keyEnd)).toBe('other');
  });
});

describe('error replies', () => {
  it('are the exact lines of SPEC §1', () => {
    expect(PARSE_ERROR_REPLIES.slice(1)).toEqual([
      'ERROR empty command\n',
      'ERROR unknown command\n',
      'ERROR wrong number of arguments\n',
      'ERROR invalid key\n',
      'ERROR invalid expire time\n',
      'ERROR value too large\n',
    ]);
  });
});

// The parser finds and checks a key in its own byte loops; on any bytes it must give what
// the rules of SPEC §1, written out plainly here, give, in their order of precedence.
describe('parseCommand: keys and argument counts agree with the rules, on random lines', () => {
  const keyOk = (k: Buffer): boolean =>
    k.length >= 1 && k.length <= 250 && k.every((b) => b > 0x20 && b !== 0x7f) && isUtf8(k);

  /** The reply the rules give for `name rest` (one of GET/DELETE/TTL/SET), and the key and value. */
  function byTheRules(name: string, rest: Buffer): Parsed {
    const sp = rest.indexOf(0x20);
    if (name === 'SET') {
      if (sp === -1) return err(name, 'wrong_number_of_arguments');
      if (!keyOk(rest.subarray(0, sp))) return err(name, 'invalid_key');
      return { command: name, key: rest.toString('latin1', 0, sp), value: rest.toString('latin1', sp + 1) };
    }
    if (!keyOk(rest.subarray(0, sp === -1 ? rest.length : sp))) return err(name, 'invalid_key');
    if (sp !== -1) return err(name, 'wrong_number_of_arguments');
    return { command: name, key: rest.toString('latin1') };
  }

  it('for keys and arguments made of letters, spaces, control bytes, DEL and UTF-8 (valid or not)', () => {
    const piece = fc.oneof(
      fc.constantFrom('a', 'k', '9', ':', ' ', '  ', '\t', '\x01', '\x7f', '\xc3\xa9', '\xe2\x82\xac', '\xc3', '\x80', '\xff'),
      fc.string({ minLength: 1, maxLength: 4 }),
    );
    fc.assert(
      fc.property(fc.constantFrom('GET', 'DELETE', 'TTL', 'SET'), fc.array(piece, { minLength: 1, maxLength: 12 }), fc.boolean(), (name, pieces, long) => {
        let rest = Buffer.from(pieces.join(''), 'latin1');
        if (long) rest = Buffer.concat([Buffer.alloc(248, 0x6b), rest]); // around the 250-byte bound
        expect(parse(Buffer.concat([Buffer.from(`${name} `), rest]))).toEqual(byTheRules(name, rest));
      }),
      { numRuns: 3000 },
    );
  });
});
