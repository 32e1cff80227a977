// How every bench script reads its options: node's parseArgs (long options, `--no-<flag>`
// for a boolean), `--help` printing the script's usage, and numbers checked one way.
// Unknown options throw, as parseArgs does.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

const HELP = { help: { type: 'boolean' } } as const;

/** The script's options from `args` (its argv by default); with --help, prints `usage` and exits 0. */
export function parseOptions<const O extends ParseArgsOptionsConfig>(usage: string, options: O, args: readonly string[] = process.argv.slice(2)) {
  const { values } = parseArgs({ args: [...args], options: { ...options, ...HELP }, allowNegative: true });
  if ((values as { help?: boolean }).help) {
    process.stdout.write(usage.endsWith('\n') ? usage : `${usage}\n`);
    process.exit(0);
  }
  return values;
}

/**
 * A number option: `fallback` when it is absent or empty, else a finite number of at least
 * `min` (a whole number with `integer`); anything else is refused: the message, naming
 * the option, on stderr and exit status 2, before the script starts anything.
 */
export function numberOption(name: string, raw: string | undefined, fallback: number, { min = 0, integer = false }: { min?: number; integer?: boolean } = {}): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  const ok = integer ? Number.isSafeInteger(n) : Number.isFinite(n);
  if (ok && n >= min) return n;
  process.stderr.write(`${name}=${raw}: expected ${integer ? 'a whole number' : 'a number'} of at least ${min}\n`);
  process.exit(2);
}
