// The store's own defaults for V8 flags (main.ts): each set at start-up unless the command
// line gave the same flag, so an operator's `node --flag ... services/store/main.ts` wins.
import { setFlagsFromString } from 'node:v8';

/**
 * Whether `execArgv` names the flag of `flag` (e.g. '--heap-growing-percent=500' or
 * '--no-memory-reducer'): in either spelling (V8 takes - and _ alike), with or without
 * `no-`, with a value after = or none.
 */
export function flagGiven(flag: string, execArgv: readonly string[]): boolean {
  const name = flag.replace(/^--(no-)?/, '').replace(/=.*$/, '');
  const pattern = new RegExp(`^--(no-)?${name.replace(/[-_]/g, '[-_]')}(=|$)`);
  return execArgv.some((arg) => pattern.test(arg));
}

/** Sets V8 flag `flag` now, unless this process's command line gave it (flagGiven); returns whether it did. */
export function defaultV8Flag(flag: string): boolean {
  if (flagGiven(flag, process.execArgv)) return false;
  setFlagsFromString(flag);
  return true;
}
