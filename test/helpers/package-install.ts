import { execFile } from 'node:child_process';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** What `npm pack --json` says of the tarball. */
export interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly integrity: string;
  readonly files: readonly { path: string; size: number }[];
}

/** `npm pack` of the repo into `dir` (its prepack script builds lib/ first). */
export async function packProject(dir: string): Promise<PackResult> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 });
  return (JSON.parse(stdout.slice(stdout.indexOf('['))) as PackResult[])[0]!;
}

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  dev?: boolean;
  devOptional?: boolean;
  [field: string]: unknown;
}

/**
 * Installs the tarball into `dir`, an empty project, as `npm install <tarball>` would, but
 * with no network: npm ci leaves the dependencies' tarballs in npm's cache and not their
 * registry documents, which a plain `npm install --offline` asks for. So the project gets
 * a lock file naming the tarball and, for its dependencies, the entries of the repo's own
 * lock (same versions, same integrity), and `npm ci --offline` installs from the cache.
 *
 * `testcontainers`, the optional peer dependency of `kvstack/testcontainers`, and `vitest`
 * (for the type check of the Testcontainers page's example) are linked from the repo's
 * node_modules, as a user's own dev dependencies would be there: installing their ~200
 * packages again would take half a minute on a 2-core machine.
 */
export async function installTarball(dir: string, pack: PackResult, tarballDir: string): Promise<void> {
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as Record<string, Record<string, string>> & { version: string; license: string };
  const lock = JSON.parse(await readFile(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const spec = `file:${join(tarballDir, pack.filename)}`;

  // The dependencies' closure in the repo's lock, nested paths resolved as Node does.
  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ; ) {
      const key = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
      if (lock.packages[key]) return key;
      if (dir === '') return undefined;
      const i = dir.lastIndexOf('/node_modules/');
      dir = i < 0 ? '' : dir.slice(0, i);
    }
  };
  const closure = new Set<string>();
  const visit = (key: string): void => {
    if (closure.has(key)) return;
    closure.add(key);
    const entry = lock.packages[key]!;
    for (const dep of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const found = resolve(key, dep);
      if (found) visit(found);
    }
  };
  for (const dep of Object.keys(pkg.dependencies!)) visit(resolve('', dep)!);

  const packages: Record<string, unknown> = { '': { name: 'app', dependencies: { kvstack: spec } } };
  for (const key of closure) {
    const { dev: _dev, devOptional: _devOptional, ...entry } = lock.packages[key]!;
    packages[key] = entry;
  }
  packages['node_modules/kvstack'] = {
    version: pkg.version,
    resolved: spec,
    integrity: pack.integrity,
    license: pkg.license,
    hasInstallScript: true,
    dependencies: pkg.dependencies,
    bin: pkg.bin,
    engines: pkg.engines,
    peerDependencies: pkg.peerDependencies,
    peerDependenciesMeta: pkg.peerDependenciesMeta,
  };
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { kvstack: spec } }, null, 2));
  await writeFile(join(dir, 'package-lock.json'), JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }, null, 2));
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
  for (const dev of ['testcontainers', 'vitest']) await symlink(join(repoRoot, 'node_modules', dev), join(dir, 'node_modules', dev), 'dir');
}
