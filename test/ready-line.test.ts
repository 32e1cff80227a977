// services/shared/ready-line.ts: the ready lines' messages, and the one reader of them
// that tests and the bench harness wait on.
import { describe, expect, it } from 'vitest';
import { BACKEND_READY, parseLogLine, parseReadyLine, STORE_READY } from '../services/shared/ready-line.ts';

describe('ready line', () => {
  it('keeps the messages compose files and operators wait for', () => {
    expect(STORE_READY).toBe('kvstore ready');
    expect(BACKEND_READY).toBe('kvbackend ready');
  });

  it('returns the fields of the ready line it is asked for', () => {
    const line = JSON.stringify({ level: 30, msg: STORE_READY, port: 8765, metricsPort: 9100, nativeIo: true });
    expect(parseReadyLine(line, STORE_READY)).toMatchObject({ port: 8765, metricsPort: 9100, nativeIo: true });
    expect(parseReadyLine(line, BACKEND_READY)).toBeUndefined();
  });

  it('is undefined for any other line', () => {
    for (const line of ['', 'kvstore ready', '{"msg":"kvstore ready"', '[1,2]', '{"msg":"kvstore ready","port":"8765"}', JSON.stringify({ msg: 'snapshot saved', port: 1 })]) {
      expect(parseReadyLine(line, STORE_READY), line).toBeUndefined();
    }
    expect(parseLogLine('{"msg":"x","n":1}')).toEqual({ msg: 'x', n: 1 });
    expect(parseLogLine('null')).toBeUndefined();
  });
});
