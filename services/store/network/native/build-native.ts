// Builds socket-io.node, the store's client-socket I/O in C (socket-io.c), next to this
// file in build/. Run by `npm ci` (package.json "install"). It never fails the install:
// without Linux, a C compiler (CC, else cc) or Node's headers it says why in one line and
// the store uses Node's own socket I/O (STORE_NATIVE_IO=auto; docs/configuration.md).
// It imports nothing of the project's: the image's native stage copies this folder alone.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, 'socket-io.c');
const output = join(here, 'build', 'socket-io.node');
/** Node's headers as its release archives lay them out: <prefix>/include/node beside <prefix>/bin/node. */
const headers = join(dirname(process.execPath), '..', 'include', 'node');

function build(): string {
  if (process.platform !== 'linux') return `not built: epoll is Linux's (this is ${process.platform})`;
  if (!existsSync(join(headers, 'node_api.h'))) return `not built: no Node headers at ${headers}`;
  mkdirSync(dirname(output), { recursive: true });
  rmSync(output, { force: true }); // a failed build must not leave an older one to be loaded
  const cc = process.env.CC || 'cc';
  const args = ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-I', headers, '-o', output, source];
  const result = spawnSync(cc, args, { encoding: 'utf8' });
  if (result.error) return `not built: ${cc} cannot run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})`;
  if (result.status !== 0) return `not built: ${cc} failed\n${result.stderr}`;
  return `built ${output}`;
}

console.log(`kvstack store socket I/O: ${build()}`);
