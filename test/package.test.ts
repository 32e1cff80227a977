import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatStoreUrl } from '../services/client/store-url.ts';
import { loadStoreConfig } from '../services/config/config.ts';
import { createLogger } from '../services/shared/logger.ts';
import { Secret } from '../services/shared/secret.ts';
import { startStoreService, type StoreService } from '../services/store/store-service.ts';
import { installTarball, packProject, repoRoot, type PackResult } from './helpers/package-install.ts';

// The project as users get it: packed once, installed from the tarball into an empty
// project with no network, each entry point imported from plain JavaScript and checked by
// tsc against the installed declarations, the `kv` bin run, and every example of
// docs/client.md run against real stores.

const run = promisify(execFile);
const PASSWORD = 'a p@ssword with spaces';

let work: string;
let app: string;
let pack: PackResult;
const stores: StoreService[] = [];
let storeUrls: string[];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kvstack-package-'));
  app = join(work, 'app');
  await run('mkdir', [app]);
  const password = new Secret(PASSWORD);
  const starting = [0, 1].map(() => startStoreService(loadStoreConfig({}, { port: 0, metricsPort: 0, logLevel: 'silent', warmupKeys: 0, password }), { logger: createLogger({ name: 'kvstore', level: 'silent' }) }));
  const [packed] = await Promise.all([packProject(work), ...starting.map(async (s) => stores.push(await s))]);
  pack = packed as PackResult;
  storeUrls = stores.map((s) => formatStoreUrl({ host: '127.0.0.1', port: s.port, password: PASSWORD }));
  await installTarball(app, pack, work);
}, 180_000);

afterAll(async () => {
  for (const s of stores) s.destroy();
  if (work) await rm(work, { recursive: true, force: true });
});

/** Runs a script in the installed project under this Node, with the stores' URLs. */
async function node(file: string, args: string[] = [], env: Record<string, string> = {}) {
  try {
    const r = await run(process.execPath, [file, ...args], { cwd: app, env: { ...process.env, KVSTACK_URL: storeUrls[0]!, KVSTACK_URL_2: storeUrls[1]!, ...env }, timeout: 30_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the packed project', () => {
  it('carries the built JavaScript, its declarations, the kv bin and the top-level papers, and nothing else', () => {
    const paths = pack.files.map((f) => f.path).sort();
    const allowed = /^(lib\/.+\.(js|d\.ts)|bin\/kv\.js|bin\/require-node-24\.js|package\.json|README\.md|CHANGELOG\.md|LICENSE)$/;
    expect(paths.filter((p) => !allowed.test(p))).toEqual([]);
    expect(paths.filter((p) => /^(test|bench|services|docs|grafana|deploy)\/|(^|\/)fixtures\//.test(p))).toEqual([]);
    for (const p of ['lib/client/index.js', 'lib/client/index.d.ts', 'lib/testcontainers/index.js', 'lib/testcontainers/index.d.ts', 'lib/cli/kv-main.js', 'bin/kv.js', 'CHANGELOG.md', 'LICENSE', 'README.md']) expect(paths).toContain(p);
    for (const js of paths.filter((p) => p.endsWith('.js') && p.startsWith('lib/'))) expect(paths).toContain(js.replace(/\.js$/, '.d.ts'));
    console.log(`${pack.filename}: ${(pack.size / 1024).toFixed(1)} KiB packed, ${(pack.unpackedSize / 1024).toFixed(1)} KiB unpacked, ${pack.files.length} files`);
    // A bound that notices something large slipping in (it is about 100 KiB).
    expect(pack.size).toBeLessThan(200 * 1024);
  });

  it('kvstack/client and kvstack/testcontainers import from plain JavaScript, the client talks to a real store; internals stay closed', async () => {
    await writeFile(
      join(app, 'client.mjs'),
      `import { StoreConnection, StoreReplyError, StoreError, parseStoreUrl } from 'kvstack/client';
import pkg from 'kvstack/package.json' with { type: 'json' };
import { KvstackContainer, KvstackBackendContainer } from 'kvstack/testcontainers';
import { GenericContainer } from 'testcontainers';
const store = new StoreConnection(parseStoreUrl(process.env.KVSTACK_URL));
await store.set('from-the-tarball', 'yes');
const value = await store.get('from-the-tarball');
await store.close();
const closed = [];
for (const path of ['kvstack', 'kvstack/lib/client/index.js', 'kvstack/services/client/index.ts']) {
  try { await import(path); } catch (err) { closed.push(err.code); }
}
const modules = [new KvstackContainer(), new KvstackBackendContainer()].every((c) => c instanceof GenericContainer);
console.log(JSON.stringify({ version: pkg.version, value: value.toString(), subclass: StoreReplyError.prototype instanceof StoreError, closed, modules }));
`,
    );
    const r = await node('client.mjs');
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ version: '0.1.0', value: 'yes', subclass: true, closed: ['ERR_PACKAGE_PATH_NOT_EXPORTED', 'ERR_PACKAGE_PATH_NOT_EXPORTED', 'ERR_PACKAGE_PATH_NOT_EXPORTED'], modules: true });
  });

  it('testcontainers is no runtime dependency: only lib/testcontainers/ imports it, and it is an optional peer', async () => {
    const importers = pack.files.map((f) => f.path).filter((p) => p.endsWith('.js'));
    const users: string[] = [];
    for (const p of importers) if (/from ['"]testcontainers['"]/.test(await readFile(join(app, 'node_modules', 'kvstack', p), 'utf8'))) users.push(p);
    expect(users.length).toBeGreaterThan(0);
    expect(users.filter((p) => !p.startsWith('lib/testcontainers/'))).toEqual([]);
    const installed = JSON.parse(await readFile(join(app, 'node_modules', 'kvstack', 'package.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    expect(installed.dependencies).not.toHaveProperty('testcontainers');
    expect(installed.peerDependenciesMeta).toEqual({ testcontainers: { optional: true } });
  });

  it('tsc checks TypeScript against the installed declarations: right code and the Testcontainers page\'s example pass, a wrong type is caught', async () => {
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2024', lib: ['es2024', 'esnext.disposable'], module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, types: ['node'], typeRoots: [join(repoRoot, 'node_modules', '@types')] },
        files: ['good.ts', 'wrong.ts', 'testcontainers-page.test.ts'],
      }),
    );
    await writeFile(
      join(app, 'good.ts'),
      `import { StoreConnection, StorePool, ShardedStore, StoreArgumentError, parseStoreUrl, type ArgumentErrorCode, type ConnectionState } from 'kvstack/client';
const store = new StoreConnection({ ...parseStoreUrl('kvstack://127.0.0.1:8765'), timeoutMs: 500 });
const value: Buffer | null = await store.get('k');
const ttl: number | null = await store.ttl('k');
const state: ConnectionState = store.state;
const code: ArgumentErrorCode = new StoreArgumentError('invalid_key', 'x').code;
const pool = new StorePool({ host: 'h', port: 1, size: 2 });
const ring = new ShardedStore({ shards: [{ name: 'a', host: 'h', port: 1 }], pool: { size: 1 } });
import { KvstackContainer, KvstackBackendContainer, type StartedKvstackContainer } from 'kvstack/testcontainers';
export async function withStore(): Promise<string> {
  await using store: StartedKvstackContainer = await new KvstackContainer().withPassword('pw').withMemoryCap(1 << 20).withEvictionPolicy('noeviction').withTls({ cert: 'PEM', key: 'PEM', ca: 'PEM', clientAuth: 'require', client: { cert: 'PEM', key: 'PEM' } }).start();
  await using backend = await new KvstackBackendContainer().withStore(store).start();
  const client: StoreConnection = await store.client({ timeoutMs: 100 });
  await client.set('k', 'v');
  return store.getConnectionUrl() + backend.getHttpUrl() + store.getAdminUrl();
}
export { value, ttl, state, code, pool, ring };
`,
    );
    const page = await readFile(join(repoRoot, 'docs', 'testcontainers.md'), 'utf8');
    const example = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(example).toHaveLength(1);
    await writeFile(join(app, 'testcontainers-page.test.ts'), example[0]!);
    await writeFile(join(app, 'wrong.ts'), `import { StoreConnection } from 'kvstack/client';\nexport const n: number = await new StoreConnection({ host: 'h', port: 1 }).get('k');\n`);
    const r = await node(join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), ['-p', '.']);
    const errors = r.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^wrong\.ts\(2,14\): error TS2322: Type 'Buffer.*null' is not assignable to type 'number'/);
  });

  it('the kv bin runs the built JavaScript from node_modules, as kv and as npx kvstack', async () => {
    const kv = join(app, 'node_modules', '.bin', 'kv');
    const env = { KV_STORE: `127.0.0.1:${stores[0]!.port}`, KV_STORE_PASSWORD: PASSWORD };
    expect(await node(kv, ['set', 'via-kv', 'hello', 'there'], env)).toMatchObject({ code: 0, stdout: 'OK\n' });
    expect(await node(kv, ['get', 'via-kv'], env)).toMatchObject({ code: 0, stdout: 'hello there', stderr: '' });
    // `npx kvstack` runs the package's one bin.
    const npx = await run('npx', ['--offline', 'kvstack', 'get', 'via-kv'], { cwd: app, env: { ...process.env, ...env } });
    expect(npx.stdout).toBe('hello there');
  });

  it('every example of docs/client.md runs as it stands against the installed package', async () => {
    const page = await readFile(join(repoRoot, 'docs', 'client.md'), 'utf8');
    const examples = [...page.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(examples.length).toBeGreaterThanOrEqual(5);
    const results = await Promise.all(
      examples.map(async (code, i) => {
        await writeFile(join(app, `example-${i}.mjs`), code);
        return { example: i, ...(await node(`example-${i}.mjs`)) };
      }),
    );
    for (const r of results) expect(r, `docs/client.md example ${r.example + 1}`).toMatchObject({ code: 0, stderr: '' });
  });

  it('docs/client.md names every error class the package exports', async () => {
    const page = await readFile(join(repoRoot, 'docs', 'client.md'), 'utf8');
    const client = (await import('../services/client/index.ts')) as Record<string, unknown>;
    const errorClasses = Object.entries(client).filter(([, v]) => typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Error);
    expect(errorClasses.length).toBeGreaterThan(5);
    for (const [name] of errorClasses) if (name !== 'StoreError') expect(page, name).toContain(`| \`${name}\` |`);
  });
});
