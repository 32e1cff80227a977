// Where this Node's listener has no handle to take connections from (a Node that keeps it
// elsewhere: services/shared/node-internals.ts's check), the store says so once and serves
// every connection as a net.Socket, its replies still written through the add-on.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadSocketIo } from '../services/store/network/native-io.ts';
import { destroyAll } from './helpers/cleanup.ts';
import { startTestStore } from './helpers/store-harness.ts';
import { b64 } from './helpers/base64.ts';

vi.mock('../services/shared/node-internals.ts', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../services/shared/node-internals.ts')>()),
  listenerHandle: () => null,
}));

afterEach(destroyAll);

describe.skipIf(!('io' in loadSocketIo()))('a listener without a reachable handle', () => {
  it('leaves connections to net.Socket, says so once, and serves them all', async () => {
    const store = await startTestStore({ nativeIo: 'on' });
    const clients = await Promise.all(Array.from({ length: 5 }, () => store.client()));
    const replies = await Promise.all(clients.map((c, i) => c.request(`SET f${i} ${i}`).then(() => c.request(`GET f${i}`))));
    expect(replies).toEqual(clients.map((_, i) => `VALUE ${b64(String(i))}`));
    const flows = store.service.server.connectionFlows();
    expect(flows).toHaveLength(5);
    expect(flows.every((f) => !f.nativeReads && f.sharedReads)).toBe(true);
    expect(store.logs.filter((l) => typeof l.msg === 'string' && l.msg.includes("listener's handle is out of reach"))).toHaveLength(1);
    for (const c of clients) c.destroy();
    await vi.waitFor(() => expect(store.service.server.connectionCount).toBe(0), { timeout: 10_000, interval: 5 });
  });
});
