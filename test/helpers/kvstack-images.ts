import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { composeFiles } from './docker-available.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Builds the store and backend images under the names docker-compose.yml gives them
 * (kvstack-store:local, kvstack-backend:local) from this checkout, as the compose suites'
 * `withBuild()` does, with the same override files (CI's builds use the host network).
 * Docker's layer cache makes it a few seconds when nothing changed.
 */
export async function buildKvstackImages(): Promise<void> {
  const files = composeFiles().flatMap((f) => ['-f', f]);
  await promisify(execFile)('docker', ['compose', ...files, 'build', 'store', 'backend'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
}
