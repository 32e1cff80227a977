import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const services = fileURLToPath(new URL('../../services/', import.meta.url));

/** Every TypeScript source under services/ (declarations aside): its path there and its text, for the suites that scan them. */
export function serviceSources(): { readonly file: string; readonly text: string }[] {
  return (readdirSync(services, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((file) => ({ file, text: readFileSync(join(services, file), 'utf8') }));
}
