import { fs } from './builtins.ts';

/**
 * Identity and version of the file at `path` after its symlinks (device, inode, size and
 * times), or the error a stat gives: two stamps differ when the file was rewritten, or
 * replaced by a symlink swap (how Kubernetes updates a mounted Secret) even if its size
 * and times look alike. What the store's watched secret files and a client's TLS files
 * compare to know they must be read again.
 */
export function fileStamp(path: string): string {
  try {
    const s = fs.statSync(path);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch (err) {
    return `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
}
