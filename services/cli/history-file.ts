import { fs } from '../shared/builtins.ts';
import { homedir } from 'node:os';
import { join } from 'node:path';

const MAX_ENTRIES = 1000;

/** Where the prompt keeps its history: KV_HISTORY_FILE, default ~/.kv_history; empty disables. */
export function historyPath(env: Record<string, string | undefined>): string | undefined {
  if (env.KV_HISTORY_FILE !== undefined) return env.KV_HISTORY_FILE || undefined;
  return join(homedir(), '.kv_history');
}

/** Newest first, as node:readline wants it. A missing or unreadable file is an empty history. */
export function loadHistory(path: string | undefined): string[] {
  if (!path) return [];
  try {
    return fs.readFileSync(path, 'utf8').split('\n').filter(Boolean).reverse().slice(0, MAX_ENTRIES);
  } catch {
    return [];
  }
}

export function saveHistory(path: string | undefined, newestFirst: readonly string[]): void {
  if (!path) return;
  try {
    fs.writeFileSync(path, newestFirst.slice(0, MAX_ENTRIES).reverse().join('\n') + '\n', { mode: 0o600 });
  } catch {
    // History is a convenience: a read-only home must not break the client.
  }
}
