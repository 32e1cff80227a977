import { readFileSync } from 'node:fs';
import { ConfigError } from '../shared/config-error.ts';
import { Secret } from '../shared/secret.ts';

// The store's password (SPEC §8) as its settings give it: in a variable, or in a file
// (a Docker or Kubernetes secret). A message about either names the variable, and the
// file's path, never the password.

/** Why a password cannot be one: it must fit in the rest of one protocol line. */
function unusable(password: string): string | undefined {
  if (password === '') return 'it is empty';
  if (password.includes('\n')) return 'it holds a line break (AUTH sends it as the rest of one line)';
  if (password.endsWith('\r')) return 'it ends with a carriage return (dropped before the LF of the line AUTH sends it on)';
  return undefined;
}

/** The parser of a password variable: '' = none. Read verbatim (not trimmed: spaces are part of it). */
export function passwordValue(raw: string, env: string): Secret | undefined {
  if (raw === '') return undefined;
  const why = unusable(raw);
  if (why !== undefined) throw new ConfigError(`${env} is invalid: ${why}`);
  return new Secret(raw);
}

/** The parser of a password-file variable: its path, '' = none (the file is read by readPasswordFile). */
export function passwordFilePath(raw: string): string {
  return raw;
}

/**
 * The password held in `path`: the whole file but one trailing line break (LF or CRLF),
 * as `echo` and editors leave one. Throws a ConfigError naming `env` and the path.
 */
export function readPasswordFile(path: string, env: string): Secret {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const password = text.replace(/\r?\n$/, '');
  const why = unusable(password);
  if (why !== undefined) throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: the password in it is unusable: ${why}`);
  return new Secret(password);
}

/** Where a password comes from: the variable that holds it and the one that names its file. */
export interface PasswordSettings {
  readonly password: Secret | undefined;
  readonly passwordFile: string;
  readonly passwordEnv: string;
  readonly passwordFileEnv: string;
}

/** The password in effect: the variable's, or the file's (read now); both set is an error. */
export function resolvePassword({ password, passwordFile, passwordEnv, passwordFileEnv }: PasswordSettings): Secret | undefined {
  if (password !== undefined && passwordFile !== '') throw new ConfigError(`${passwordEnv} and ${passwordFileEnv} are both set: set one of them`);
  return passwordFile === '' ? password : readPasswordFile(passwordFile, passwordFileEnv);
}
