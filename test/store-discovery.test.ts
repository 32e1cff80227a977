// DNS discovery's lookups and refresh loop (SPEC §6) against a DNS server of the test's
// own on loopback: SRV members named by their target host, A/AAAA members by address,
// answers that change, a server that times out, an empty answer, a pod whose address
// changes; a failure keeps the last members and is reported once per run.
import { createServer, connect, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startShardDiscovery, type DiscoveredShard, type ShardDiscovery } from '../services/client/shard-discovery.ts';
import { DiscoveryError, ShardResolver } from '../services/client/shard-resolver.ts';
import { parseStoreSource, type StoreDiscovery } from '../services/config/store-list.ts';
import { startTestDnsServer, type TestDnsServer } from './helpers/dns-server.ts';
import { waitUntil } from './helpers/wait-until.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SRV = '_kv._tcp.store.test';
const pod = (i: number) => `store-${i}.store.test`;

async function dns(records: Parameters<typeof startTestDnsServer>[0]): Promise<TestDnsServer> {
  const server = await startTestDnsServer(records);
  cleanups.push(() => server.close());
  return server;
}

function resolverFor(server: TestDnsServer, timeoutMs = 2000): ShardResolver {
  const resolver = new ShardResolver({ dnsServer: { host: '127.0.0.1', port: server.port }, timeoutMs });
  cleanups.push(() => resolver.cancel());
  return resolver;
}

const source = (raw: string) => parseStoreSource(raw, 'KV_STORE') as StoreDiscovery;

interface Events {
  changes: (readonly DiscoveredShard[])[];
  failures: { err: DiscoveryError; first: boolean }[];
  recovered: number[];
}

function discover(raw: string, resolver: ShardResolver, refreshMs = 20): { discovery: ShardDiscovery; events: Events } {
  const events: Events = { changes: [], failures: [], recovered: [] };
  const discovery = startShardDiscovery({
    source: source(raw),
    resolver,
    refreshMs,
    onMembers: (m) => events.changes.push(m),
    onFailure: (err, first) => events.failures.push({ err, first }),
    onRecovered: (n) => events.recovered.push(n),
  });
  cleanups.push(() => discovery.close());
  return { discovery, events };
}

const names = (members: readonly { name: string }[]) => members.map((m) => m.name);

describe('the resolver', () => {
  it('SRV: one member per target host, named by it fully qualified (lower case, no final dot), at the SRV port', async () => {
    const server = await dns({
      [SRV]: {
        srv: [
          { target: 'Store-1.store.test.', port: 7001 },
          { target: pod(0), port: 7000 },
          { target: pod(1), port: 7999, priority: 10 }, // the same host again, less preferred: ignored
        ],
      },
      [pod(0)]: { a: ['127.0.0.1'] },
      [pod(1)]: { a: ['127.0.0.2'] },
    });
    const members = await resolverFor(server).members(source(`dnssrv+${SRV}`));
    expect(members).toEqual([
      { name: pod(0), host: pod(0), port: 7000 },
      { name: pod(1), host: pod(1), port: 7001 },
    ]);
  });

  it('dns+: one member per A and AAAA address, named by the address and the port', async () => {
    const server = await dns({ 'store.test': { a: ['10.0.0.2', '10.0.0.1'], aaaa: ['fd00::7'] } });
    const members = await resolverFor(server).members(source('dns+store.test:8765'));
    expect(members).toEqual([
      { name: '10.0.0.1:8765', host: '10.0.0.1', port: 8765 },
      { name: '10.0.0.2:8765', host: '10.0.0.2', port: 8765 },
      { name: '[fd00::7]:8765', host: 'fd00::7', port: 8765 },
    ]);
  });

  it('without KV_STORE_DNS_SERVER, addresses come from the system lookup', async () => {
    const resolver = new ShardResolver();
    cleanups.push(() => resolver.cancel());
    expect(resolver.connectLookup).toBeUndefined(); // net.connect's own lookup: the system's, on every connect
    const members = await resolver.members(source('dns+localhost:8765'));
    expect(names(members)).toContain('127.0.0.1:8765');
  });

  it('an empty answer, an unknown name, SERVFAIL and a silent server are each a DiscoveryError of their kind', async () => {
    const server = await dns({ [SRV]: {}, 'empty.test': {} });
    const resolver = resolverFor(server, 100);
    const failure = async (raw: string) => {
      const err = await resolver.members(source(raw)).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(DiscoveryError);
      return err as DiscoveryError;
    };
    expect((await failure(`dnssrv+${SRV}`)).reason).toBe('empty');
    expect((await failure('dns+empty.test:1')).reason).toBe('empty');
    expect((await failure('dnssrv+_kv._tcp.nowhere.test')).reason).toBe('empty');
    server.mode = 'servfail';
    expect((await failure(`dnssrv+${SRV}`)).reason).toBe('failed');
    server.mode = 'silent';
    const started = performance.now();
    const timedOut = await failure(`dnssrv+${SRV}`);
    expect(timedOut.reason).toBe('timeout');
    expect(timedOut.message).toContain(SRV);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('connects a target through the same server, looked up again on every connect: a pod whose address changed is reached under its name', async () => {
    const server = await dns({ [pod(0)]: { a: ['127.0.0.1'] } });
    const resolver = resolverFor(server);
    const listeners: Server[] = [];
    const listen = async (host: string, port = 0): Promise<number> => {
      const srv = createServer((s) => s.end(`${host}\n`));
      listeners.push(srv);
      cleanups.push(() => new Promise((r) => srv.close(r)));
      await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(port, host, resolve));
      return (srv.address() as { port: number }).port;
    };
    const port = await listen('127.0.0.1');
    await listen('127.0.0.2', port);
    const greeting = () =>
      new Promise<string>((resolve, reject) => {
        const s = connect({ host: pod(0), port, lookup: resolver.connectLookup });
        let got = '';
        s.on('data', (d) => (got += d));
        s.on('end', () => resolve(got.trim()));
        s.on('error', reject);
      });
    expect(await greeting()).toBe('127.0.0.1');
    server.records.set(pod(0), { a: ['127.0.0.2'] });
    expect(await greeting()).toBe('127.0.0.2');
    server.records.set(pod(0), {});
    await expect(greeting()).rejects.toThrow(/no A or AAAA records/);
  });
});

describe('the refresh loop', () => {
  it('follows answers that change, telling each change once (not every poll), with each target\'s addresses', async () => {
    const server = await dns({
      [SRV]: { srv: [{ target: pod(0), port: 7000 }] },
      [pod(0)]: { a: ['127.0.0.1'] },
      [pod(1)]: { a: ['127.0.0.2'] },
    });
    const { discovery, events } = discover(`dnssrv+${SRV}`, resolverFor(server));
    await discovery.found;
    expect(discovery.members).toEqual([{ name: pod(0), host: pod(0), port: 7000, addresses: ['127.0.0.1'] }]);
    const polls = () => server.questions.filter((q) => q === `SRV ${SRV}`).length;
    const seen = polls();
    await waitUntil('a few more polls', async () => (polls() >= seen + 3 ? true : undefined), { everyMs: 10, deadlineMs: 10_000 });
    expect(events.changes).toHaveLength(1);

    server.records.set(SRV, { srv: [{ target: pod(0), port: 7000 }, { target: pod(1), port: 7000 }] });
    await waitUntil('the second member', async () => (discovery.members.length === 2 ? true : undefined), { everyMs: 10, deadlineMs: 10_000 });
    expect(names(events.changes.at(-1)!)).toEqual([pod(0), pod(1)]);

    // A pod's address changes: the members (names, ports) do not, the addresses follow.
    server.records.set(pod(0), { a: ['127.0.0.3'] });
    await waitUntil('the new address', async () => (discovery.members[0]!.addresses?.[0] === '127.0.0.3' ? true : undefined), { everyMs: 10, deadlineMs: 10_000 });
    expect(events.changes).toHaveLength(2);

    server.records.set(SRV, { srv: [{ target: pod(1), port: 7000 }] });
    await waitUntil('the first member gone', async () => (names(discovery.members).join() === pod(1) ? true : undefined), { everyMs: 10, deadlineMs: 10_000 });
    expect(events.changes).toHaveLength(3);
    expect(events.failures).toEqual([]);
    expect(discovery.failures).toBe(0);
    expect(discovery.lastSuccessMs).toBeGreaterThan(Date.now() - 10_000);
  });

  it('a server that times out, then an empty answer: the last members stay, the run of failures is told once, each failure counted, the recovery told', async () => {
    const server = await dns({ 'store.test': { a: ['10.0.0.1', '10.0.0.2'] } });
    const { discovery, events } = discover('dns+store.test:8765', resolverFor(server, 50));
    await discovery.found;
    const success = discovery.lastSuccessMs!;
    server.mode = 'silent';
    await waitUntil('three failures', async () => (discovery.failures >= 3 ? true : undefined), { everyMs: 10, deadlineMs: 20_000 });
    server.mode = 'answer';
    server.records.set('store.test', {});
    await waitUntil('two more failures', async () => (discovery.failures >= 5 ? true : undefined), { everyMs: 10, deadlineMs: 20_000 });
    expect(names(discovery.members)).toEqual(['10.0.0.1:8765', '10.0.0.2:8765']);
    expect(discovery.lastSuccessMs).toBe(success);
    expect(events.failures.filter((f) => f.first)).toHaveLength(1);
    expect(events.failures[0]!.err.reason).toBe('timeout');
    expect(events.failures.at(-1)!.err.reason).toBe('empty');
    expect(events.failures).toHaveLength(discovery.failures);
    expect(events.changes).toHaveLength(1);

    server.records.set('store.test', { a: ['10.0.0.1'] });
    await waitUntil('recovered', async () => (discovery.members.length === 1 ? true : undefined), { everyMs: 10, deadlineMs: 10_000 });
    expect(events.recovered).toHaveLength(1);
    expect(events.recovered[0]).toBeGreaterThanOrEqual(5);
    expect(discovery.lastSuccessMs).toBeGreaterThan(success);
  });

  it('at start-up, a lookup that finds nothing leaves it without members until one does', async () => {
    const server = await dns({});
    const { discovery, events } = discover(`dnssrv+${SRV}`, resolverFor(server));
    await waitUntil('two failures', async () => (discovery.failures >= 2 ? true : undefined), { everyMs: 10, deadlineMs: 10_000 });
    expect(discovery.members).toEqual([]);
    expect(discovery.lastSuccessMs).toBeUndefined();
    expect(events.failures[0]).toMatchObject({ first: true, err: { reason: 'empty' } });
    server.records.set(SRV, { srv: [{ target: pod(0), port: 7000 }] });
    await discovery.found;
    expect(names(discovery.members)).toEqual([pod(0)]);
  });

  it('close() stops the polling and cancels the lookup in flight', async () => {
    const server = await dns({ 'store.test': { a: ['10.0.0.1'] } });
    const { discovery } = discover('dns+store.test:1', resolverFor(server, 5000), 10);
    await discovery.found;
    server.mode = 'silent'; // the next lookup hangs until cancelled
    const asked = server.questions.length;
    await waitUntil('a lookup in flight', async () => (server.questions.length > asked ? true : undefined), { everyMs: 5, deadlineMs: 10_000 });
    const started = performance.now();
    await discovery.close();
    expect(performance.now() - started).toBeLessThan(1000);
    const after = server.questions.length;
    server.mode = 'answer';
    // Another lookup would have been asked within a few refresh periods; none is.
    const probe = resolverFor(server);
    await probe.members(source('dns+store.test:1')); // one round trip through the server
    await probe.members(source('dns+store.test:1'));
    expect(server.questions.length).toBe(after + 4); // the probe's own A and AAAA, twice
  });
});
