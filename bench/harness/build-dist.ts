// The compiled form of a checkout's services, as the image runs them: `npm run build` (the
// TypeScript compiled to dist/) and the store's C add-on copied beside its compiled loader,
// as the image's store stage does (deploy/Dockerfile).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';

/** Builds `root`'s dist/ (throws on a failed build); returns it. */
export function buildDist(root: string): string {
  const local = join(root, 'node_modules', '.bin', 'tsc');
  const [command, ...args] = [...(existsSync(local) ? [local] : ['npx', 'tsc']), '-p', 'tsconfig.build.json'];
  const run = spawnSync(command!, args, { cwd: root, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`npm run build failed in ${root}: ${run.stdout}${run.stderr}`);
  const addon = join(root, 'services', 'store', 'network', 'native', 'build');
  if (existsSync(addon)) cpSync(addon, join(root, 'dist', 'store', 'network', 'native', 'build'), { recursive: true });
  return join(root, 'dist');
}
