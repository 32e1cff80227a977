import { fs } from '../shared/builtins.ts';
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

/** What a password file holds: the password, and during a rotation the one before it, which the store accepts too. */
export interface FilePasswords {
  readonly password: Secret;
  readonly previous: Secret | undefined;
}

/**
 * The passwords held in `path`: one line, or two during a rotation (the password, then the
 * previous one), one trailing line break (LF or CRLF) dropped, as `echo` and editors leave
 * one. Throws a ConfigError naming `env` and the path, never a password.
 */
export function readPasswords(path: string, env: string): FilePasswords {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const lines = text.replace(/\r?\n$/, '').split(/\r?\n/);
  if (lines.length > 2) throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: it holds ${lines.length} lines (the password, and during a rotation the previous one: two at most)`);
  const [password, previous] = lines.map((line, i) => {
    const why = unusable(line);
    if (why !== undefined) throw new ConfigError(`${env}=${JSON.stringify(path)} is invalid: the ${i === 0 ? 'password' : 'previous password (its second line)'} in it is unusable: ${why}`);
    return new Secret(line);
  });
  return { password: password!, previous };
}

/** The password held in `path` (its first line: a client sends that one). Throws as readPasswords does. */
export function readPasswordFile(path: string, env: string): Secret {
  return readPasswords(path, env).password;
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
