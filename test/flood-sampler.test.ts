// bench/store-flood.ts's sampler: on its own thread, it reports the peak RSS of a process
// and the bytes the kernel queues on the connections to a port.
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startFloodSampler } from '../bench/flood-sampler.ts';
import { rssOf } from '../bench/harness/proc.ts';

const ssAvailable = spawnSync('ss', ['-V'], { stdio: 'ignore' }).status === 0;
if (!ssAvailable) console.warn("flood-sampler: SKIPPED — no 'ss' on PATH (iproute2)");

describe.skipIf(!ssAvailable)('the flood sampler', () => {
  it('reports this process’s RSS and the bytes queued on a connection whose client does not read', async () => {
    const server = createServer();
    const accepted: Socket[] = [];
    server.on('connection', (s) => accepted.push(s));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const client = connect({ port, host: '127.0.0.1' });
    await once(client, 'connect');
    client.pause(); // never reads
    await expect.poll(() => accepted.length).toBe(1);
    const sampler = startFloodSampler(process.pid, port);
    const writer = accepted[0]!;
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 64; i++) writer.write(chunk); // more than the kernel takes
    // A chunk the kernel took whole is at least 1 MiB in its queues (the reader never reads).
    await expect.poll(() => writer.writableLength <= 63 * chunk.length).toBe(true);
    const peaks = await sampler.stop();
    expect(peaks.rss).toBeGreaterThanOrEqual(rssOf(process.pid) / 2);
    expect(peaks.sendQ).toBeGreaterThan(0);
    expect(peaks.sendQ + peaks.recvQ).toBeGreaterThanOrEqual(chunk.length);
    client.destroy();
    for (const s of accepted) s.destroy();
    server.close();
  });
});
