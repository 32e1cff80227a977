// The one home of "no secret in any log line" (SPEC §8): every log line the services of a
// test file write, and every secret they are given, gathered here for that file.
// test/setup/log-secrets.ts feeds it (through every logger createLogger makes, every
// Secret and every tokens file, in-process) and so does service-process.ts (a spawned
// service's stdout, and the secrets in its environment); after the file's last hook it
// looks for each secret in each line and fails the file on one.
import { readFileSync } from 'node:fs';

/** Shorter values are not looked for: they would be found by chance in ordinary text. */
export const MIN_SECRET_LENGTH = 8;
// Lines kept for the scan at the end of the file; past this they are checked as they come
// (against the secrets known by then) and dropped, so a load test cannot exhaust memory.
const MAX_KEPT_CHARS = 64 * 1024 * 1024;

export interface Leak {
  readonly secret: string;
  readonly line: string;
}

const secrets = new Set<string>();
let kept: string[] = [];
let keptChars = 0;
let lineCount = 0;
const leaks: Leak[] = [];

/** Records a secret a service was given. A PEM key is also looked for line by line: one line of it is a leak too. */
export function recordSecret(value: string): void {
  if (value.includes('-----BEGIN')) {
    for (const line of value.split('\n')) if (!line.startsWith('-----') && line.trim().length >= 16) secrets.add(line.trim());
    return;
  }
  if (value.length >= MIN_SECRET_LENGTH) secrets.add(value);
}

/** Records the tokens of a tokens file's text (the second field of each line; malformed lines too). */
export function recordTokens(text: string): void {
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/[ \t]+/);
    for (const f of fields.length === 1 ? fields : fields.slice(1)) if (f !== 'read' && f !== 'write' && !f.startsWith('#')) recordSecret(f);
  }
}

/** Records the secrets a spawned service finds in its environment: passwords, and the contents of its secret files. */
export function recordEnvSecrets(env: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '') continue;
    if (/(^|_)PASSWORD$/.test(name)) recordSecret(value);
    const file = /(_PASSWORD_FILE|_KEY_FILE|^BACKEND_TOKENS_FILE)$/.test(name) ? readQuietly(value) : undefined;
    if (file === undefined) continue;
    if (name === 'BACKEND_TOKENS_FILE') recordTokens(file);
    else recordSecret(name.endsWith('_PASSWORD_FILE') ? file.replace(/\r?\n$/, '') : file);
  }
}

function readQuietly(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // a test of an unreadable file: the service refuses it
  }
}

/** Takes log output (one or more lines) a service wrote. */
export function captureLog(chunk: string): void {
  for (const line of chunk.split('\n')) {
    if (line === '') continue;
    lineCount++;
    if (keptChars + line.length <= MAX_KEPT_CHARS) {
      kept.push(line);
      keptChars += line.length;
    } else {
      for (const secret of secrets) if (line.includes(secret)) leaks.push({ secret, line });
    }
  }
}

/** Every line that holds a secret, among those taken since the last reset. */
export function findLeaks(): Leak[] {
  const found = [...leaks];
  for (const line of kept) for (const secret of secrets) if (line.includes(secret)) found.push({ secret, line });
  return found;
}

/** What was looked at, for the summary and for tests of this module. */
export function capturedSoFar(): { lines: number; secrets: number } {
  return { lines: lineCount, secrets: secrets.size };
}

/** Forgets the lines, secrets and leaks taken so far (the setup does it after each file's scan). */
export function resetCapture(): void {
  secrets.clear();
  kept = [];
  keptChars = 0;
  lineCount = 0;
  leaks.length = 0;
}
