// bench/store-flood.ts's prober: on its own thread, PINGs (every tenth request a USAGE) a
// line server and reports each round trip with when it was sent.
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startFloodProber } from '../bench/flood-prober.ts';

describe('the flood prober', () => {
  it('sends PINGs, every tenth request a USAGE, for the time asked, and reports each round trip with when it was sent', async () => {
    const seen: string[] = [];
    const server = createServer((s: Socket) => {
      let buf = '';
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          seen.push(line);
          s.write(line === 'PING' ? 'PONG\n' : 'USAGE 0\n');
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const prober = await startFloodProber((server.address() as { port: number }).port);
      const { pings, usages } = await prober.run(300);
      expect(pings.length).toBeGreaterThanOrEqual(9);
      expect(usages.length).toBe(seen.filter((l) => l === 'USAGE').length);
      expect(pings.length).toBe(seen.filter((l) => l === 'PING').length);
      expect(seen.slice(0, 10)).toEqual([...Array<string>(9).fill('PING'), 'USAGE']);
      for (const p of [...pings.map((x) => x.ms), ...usages]) expect(p).toBeGreaterThan(0);
      const sent = pings.map((p) => p.sentAtMs);
      expect(sent).toEqual([...sent].sort((a, b) => a - b));
      expect(sent[0]).toBeLessThan(250); // at once, not after the time asked
      expect(sent.at(-1)).toBeLessThan(350); // none sent after it (the loop checks the time before each)
    } finally {
      server.close();
    }
  });
});
