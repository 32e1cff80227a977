// The store reads every client socket into one shared buffer (SharedReadBuffer): bytes a
// connection still holds when the next read lands must have been copied. Many clients
// pipelining distinct values at once, past the per-turn budget, would see one another's
// bytes otherwise.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMMANDS_PER_TURN } from '../services/store/network/served-connection.ts';
import { SharedReadBuffer } from '../services/store/network/shared-read-buffer.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

afterEach(destroyAll);

describe('reads into one shared buffer', () => {
  it('every socket of the server reads into it, and interleaved pipelines past the turn budget keep their own bytes', async () => {
    const store = await startTestStore();
    const clients = await Promise.all(Array.from({ length: 8 }, () => store.client()));
    const perClient = COMMANDS_PER_TURN * 6;
    // Lines split across writes at odd places, so partial lines and held chunks both occur.
    const scripts = clients.map((_, c) =>
      Array.from({ length: perClient }, (_, i) => (i % 2 === 0 ? `SET k${c}-${i} value-${c}-${i}-${'x'.repeat(i % 97)}` : `GET k${c}-${i - 1}`)).join('\n') + '\n',
    );
    for (let at = 0; at < Math.max(...scripts.map((s) => s.length)); at += 7919) {
      clients.forEach((client, c) => {
        const piece = scripts[c]!.slice(at, at + 7919);
        if (piece.length > 0) client.socket.write(piece);
      });
    }
    const replies = await Promise.all(clients.map((client) => client.lines(perClient)));
    replies.forEach((lines, c) => {
      const expected = Array.from({ length: perClient }, (_, i) => (i % 2 === 0 ? 'OK' : `VALUE ${b64(`value-${c}-${i - 1}-${'x'.repeat((i - 1) % 97)}`)}`));
      expect(lines).toEqual(expected);
    });
    expect(store.service.server.connectionFlows().every((f) => f.sharedReads)).toBe(true);
  });

  it('falls back to Node\'s reads, with one warning, where the accepted socket\'s handle cannot move', async () => {
    const adopt = vi.spyOn(SharedReadBuffer.prototype, 'adopt').mockReturnValue(undefined);
    try {
      const store = await startTestStore({ nativeIo: 'off' }); // the native poller would read it instead
      const [a, b] = await Promise.all([store.client(), store.client()]);
      expect(await a.request('SET k two words')).toBe('OK');
      expect(await b.request('GET k')).toBe(`VALUE ${b64('two words')}`);
      expect(adopt).toHaveBeenCalled();
      const flows = store.service.server.connectionFlows();
      expect(flows.length).toBeGreaterThanOrEqual(2);
      expect(flows.every((f) => !f.sharedReads)).toBe(true);
      expect(store.logs.filter((l) => l.msg === 'shared read buffer unavailable on this Node version: reading with a buffer per read')).toHaveLength(1);
    } finally {
      adopt.mockRestore();
    }
  });
});
