import { describe, expect, it } from 'vitest';
import { parseArgs } from '../services/cli/cli-args.ts';
import { displayReply, quoteValue } from '../services/cli/reply-display.ts';
import { replyLineJson } from '../services/cli/reply-json.ts';
import { completeCommand } from '../services/cli/repl.ts';
import { resolveStoreAddress } from '../services/cli/store-address.ts';
import { UsageError } from '../services/cli/usage-error.ts';
import { b64 } from './helpers/base64.ts';

describe('kv argument parsing', () => {
  it('takes global options before or after the command', () => {
    expect(parseArgs(['--port', '9', 'get', 'k', '--json'])).toEqual({
      options: { port: '9', timeoutMs: undefined, json: true, help: false },
      command: 'get',
      args: ['k'],
    });
    expect(parseArgs(['--timeout=50', 'SET', 'k', 'a', 'b']).options.timeoutMs).toBe(50);
    expect(parseArgs(['SET', 'k', 'a', 'b']).command).toBe('set');
  });

  it('treats dashes after the command as arguments, and -- ends the options', () => {
    expect(parseArgs(['set', 'k', '-1', '-']).args).toEqual(['k', '-1', '-']);
    expect(parseArgs(['set', 'k', '--', '--json']).args).toEqual(['k', '--json']);
    expect(parseArgs(['set', 'k', '--', '--json']).options.json).toBe(false);
  });

  it('hands everything after bench to the bench parser', () => {
    expect(parseArgs(['--host', 'h', 'bench', '-c', '3', '--json'])).toMatchObject({ command: 'bench', args: ['-c', '3', '--json'], options: { host: 'h', json: false } });
  });

  it('rejects unknown options, missing values and bad time-outs', () => {
    expect(() => parseArgs(['--bogus'])).toThrow(UsageError);
    expect(() => parseArgs(['get', 'k', '--port'])).toThrow('--port needs a value');
    expect(() => parseArgs(['--timeout', '0', 'ping'])).toThrow(UsageError);
    expect(() => parseArgs(['--json=1', 'ping'])).toThrow(UsageError);
  });

  it('resolves the store from KV_STORE, --host and --port', () => {
    expect(resolveStoreAddress({})).toEqual({ host: '127.0.0.1', port: 8765 });
    expect(resolveStoreAddress({ KV_STORE: 'cache:7000' })).toEqual({ host: 'cache', port: 7000 });
    expect(resolveStoreAddress({ KV_STORE: 'cache:7000' }, 'other', '7001')).toEqual({ host: 'other', port: 7001 });
    expect(() => resolveStoreAddress({ KV_STORE: 'nocolon' })).toThrow(/KV_STORE/);
    expect(() => resolveStoreAddress({}, undefined, '70000')).toThrow(UsageError);
  });
});

describe('reply display of the interactive client', () => {
  it('decodes values: quoted on a terminal, raw when piped', () => {
    const line = `VALUE ${b64('hi "there"\t\\')}`;
    expect(displayReply(line, true)).toBe('"hi \\"there\\"\\t\\\\"');
    expect(displayReply(line, false)).toEqual(Buffer.from('hi "there"\t\\'));
    expect(displayReply('VALUE ', true)).toBe('""');
    expect(displayReply('VALUE', false)).toEqual(Buffer.alloc(0));
  });

  it('shows (nil), (error) and everything else verbatim', () => {
    expect(displayReply('NOT_FOUND', true)).toBe('(nil)');
    expect(displayReply('ERROR invalid key', false)).toBe('(error) invalid key');
    expect(displayReply('TTL -1', true)).toBe('TTL -1');
    expect(displayReply('STATS keys=1', false)).toBe('STATS keys=1');
  });

  it('escapes control bytes and invalid UTF-8 but keeps readable UTF-8', () => {
    expect(quoteValue(Buffer.from([0x00, 0x1b, 0x7f, 0x0d]))).toBe('"\\x00\\x1b\\x7f\\r"');
    expect(quoteValue(Buffer.from('é€😀', 'utf8'))).toBe('"é€😀"');
    expect(quoteValue(Buffer.from([0xff, 0xc3, 0x41, 0xe2, 0x82]))).toBe('"\\xff\\xc3A\\xe2\\x82"');
  });
});

describe('reply JSON', () => {
  it('has one documented shape per reply', () => {
    expect(replyLineJson('OK')).toEqual({ ok: true });
    expect(replyLineJson('NOT_FOUND')).toEqual({ ok: false, notFound: true });
    expect(replyLineJson('ERROR invalid key')).toEqual({ ok: false, error: 'invalid key', kind: 'reply' });
    expect(replyLineJson('VALUE aGk=')).toEqual({ ok: true, value: 'hi', encoding: 'utf8' });
    expect(replyLineJson('VALUE /w==')).toEqual({ ok: true, value: '/w==', encoding: 'base64' });
    expect(replyLineJson('TTL -1')).toEqual({ ok: true, ttl: -1 });
    expect(replyLineJson('USAGE 12')).toEqual({ ok: true, usage: 12 });
    expect(replyLineJson('STATS keys=2 policy=lru')).toEqual({ ok: true, stats: { keys: 2, policy: 'lru' } });
    expect(replyLineJson('PONG')).toEqual({ ok: true, reply: 'PONG' });
  });
});

describe('tab completion', () => {
  it('completes the command name in the case typed', () => {
    expect(completeCommand('se')).toEqual([['set', 'setex'], 'se']);
    expect(completeCommand('EX')).toEqual([['EXPIRE', 'EXIT'], 'EX']);
    expect(completeCommand('GET ke')).toEqual([[], 'GET ke']);
  });
});
