import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface KvRun {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly out: string;
  readonly stderr: string;
}

/**
 * Runs `node bin/kv.js ...args` from the repo root as a child process, as a user would,
 * with `env` added to the environment and `input` on its stdin; resolves when it closes.
 */
export function runKvProcess(args: readonly string[], { env = {}, input }: { env?: Record<string, string>; input?: string | Buffer } = {}): Promise<KvRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/kv.js', ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out);
      resolve({ code, stdout, out: stdout.toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    child.stdin.end(input);
  });
}
