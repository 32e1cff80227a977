// What /proc says of a server process, read the same way whatever the server (the store,
// the backend, Redis): its resident memory and its open descriptors. Linux only.
import { readdirSync, readFileSync } from 'node:fs';

/** VmRSS in bytes (0 when /proc/<pid>/status has no such line); throws when the process has no /proc entry. */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** The process's open file descriptors. */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
