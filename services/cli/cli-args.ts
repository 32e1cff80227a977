import { UsageError } from './usage-error.ts';

export interface GlobalOptions {
  /** A store list, as KV_STORE takes it (overrides KV_STORE). */
  store?: string;
  host?: string;
  port?: string;
  /** A file holding the store's password (overrides KV_STORE_PASSWORD and KV_STORE_PASSWORD_FILE). */
  passwordFile?: string;
  /** --tls: speak TLS to the store (as KV_STORE_TLS=true). */
  tls?: boolean;
  /** --tls-ca-file, --tls-cert-file, --tls-key-file (override KV_STORE_TLS_*_FILE; each implies --tls). */
  tlsCaFile?: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /** Time-out per command in ms (undefined: the command's default). */
  timeoutMs: number | undefined;
  json: boolean;
  help: boolean;
}

export interface ParsedArgs {
  readonly options: GlobalOptions;
  /** Lower-cased command name, or undefined for the interactive prompt. */
  readonly command: string | undefined;
  /** Arguments after the command, global options removed (except for `bench`, which gets them raw). */
  readonly args: string[];
}

export const DEFAULT_TIMEOUT_MS = 2000;

const WITH_VALUE = new Set(['--store', '--host', '--port', '--timeout', '--password-file', '--tls-ca-file', '--tls-cert-file', '--tls-key-file']);
const FLAGS = new Set(['--json', '--help', '--tls']);

function parseTimeout(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 600_000) {
    throw new UsageError(`--timeout ${JSON.stringify(raw)}: expected milliseconds from 1 to 600000`);
  }
  return Number(raw);
}

/**
 * Splits argv into global options, a command and its arguments. Global options may
 * come before or after the command; after it, anything else that starts with `-` is an
 * argument (so `kv set k -1` and `kv set k -` work), and `--` ends option parsing
 * (`kv set k -- --json` stores "--json"). `bench` parses its own options.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const options: GlobalOptions = { timeoutMs: undefined, json: false, help: false };
  let command: string | undefined;
  const args: string[] = [];
  let optionsEnded = false;

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (command === 'bench') {
      args.push(arg);
      continue;
    }
    if (!optionsEnded && arg === '--') {
      optionsEnded = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!optionsEnded && (WITH_VALUE.has(name) || FLAGS.has(name))) {
      if (FLAGS.has(name)) {
        if (name !== arg) throw new UsageError(`${name} takes no value`);
        if (name === '--json') options.json = true;
        else if (name === '--tls') options.tls = true;
        else options.help = true;
        continue;
      }
      let value: string;
      if (name !== arg) value = arg.slice(eq + 1);
      else if (i + 1 < argv.length) value = argv[++i]!;
      else throw new UsageError(`${name} needs a value`);
      if (name === '--store') options.store = value;
      else if (name === '--host') options.host = value;
      else if (name === '--port') options.port = value;
      else if (name === '--password-file') options.passwordFile = value;
      else if (name === '--tls-ca-file') options.tlsCaFile = value;
      else if (name === '--tls-cert-file') options.tlsCertFile = value;
      else if (name === '--tls-key-file') options.tlsKeyFile = value;
      else options.timeoutMs = parseTimeout(value);
      continue;
    }
    if (command === undefined) {
      if (!optionsEnded && arg.startsWith('-') && arg !== '-') {
        throw new UsageError(`unknown option ${arg} (see kv --help)`);
      }
      command = arg.toLowerCase();
      continue;
    }
    args.push(arg);
  }
  return { options, command, args };
}
