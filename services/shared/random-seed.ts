// A random 32-bit seed from the operating system's generator, for the keyspace's hash: a
// client that cannot guess it cannot pick keys that all land in one bucket. Read from
// /dev/urandom where there is one (a few µs): node:crypto would load ~40 of Node's modules
// (3.4 MiB of a bare Node's RSS) for four bytes (builtins.ts); elsewhere, from it.
import { cryptoModule, fs } from './builtins.ts';

const URANDOM = '/dev/urandom';

/** A random signed 32-bit integer. */
export function randomSeed(): number {
  const bytes = new Uint8Array(4);
  let fd: number | undefined;
  try {
    fd = fs.openSync(URANDOM, 'r');
    if (fs.readSync(fd, bytes, 0, 4, null) !== 4) cryptoModule().getRandomValues(bytes);
  } catch {
    cryptoModule().getRandomValues(bytes);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  return new DataView(bytes.buffer).getInt32(0, true);
}
