import { cliCommands, findCommand } from './cli-commands.ts';
import { DEFAULT_TIMEOUT_MS } from './cli-args.ts';
import { DEFAULT_STORE } from './store-address.ts';

const pad = (s: string, n: number) => s.padEnd(n);

export function generalHelp(): string {
  const width = Math.max(...cliCommands.map((c) => c.synopsis.length), 'bench [options]'.length) + 2;
  return `kv — command-line client of the kvstack store

Usage:
  kv [options] <command> [args...]   run one command and exit
  kv [options]                       interactive prompt (one connection per shard)
  kv bench [options]                 load generator (kv bench --help)
  kv help <command>                  details of one command

Commands:
${cliCommands.map((c) => `  ${pad(c.synopsis, width)}${c.summary}`).join('\n')}
  ${pad('bench [options]', width)}benchmark the store

Options (before or after the command; \`--\` ends them):
  --store <list>     the store, a ring of shards: host:port[,name=host:port...], or
                     dnssrv+<name> / dns+<host>:<port> (overrides KV_STORE)
  --host <host>      store host (overrides KV_STORE; one store only)
  --port <port>      store port (overrides KV_STORE; one store only)
  --password-file <path>  a file holding the store's password (its STORE_PASSWORD), sent with
                     AUTH on every connection; overrides KV_STORE_PASSWORD(_FILE). There is no
                     option taking the password itself: a command line is visible to every
                     user of the machine (ps) and stays in the shell's history
  --tls              speak TLS to the store (its STORE_TLS_CERT_FILE); overrides KV_STORE_TLS
  --tls-ca-file <path>    PEM CA bundle the store's certificate is checked against (default:
                     the system's CAs); overrides KV_STORE_TLS_CA_FILE. Implies --tls, as do:
  --tls-cert-file <path>  PEM client certificate (a store with STORE_TLS_CLIENT_AUTH), with
  --tls-key-file <path>   its key; override KV_STORE_TLS_CERT_FILE and KV_STORE_TLS_KEY_FILE
  --timeout <ms>     time-out per command, connecting included (default ${DEFAULT_TIMEOUT_MS})
  --json             print one JSON object per reply on stdout
  --help             this text

Environment:
  KV_STORE           store address host:port (default ${DEFAULT_STORE}), or a comma-separated
                     list of shards (name=host:port, IPv6 as [::1]:8765), as the backend reads it.
                     With several shards a command on a key goes to the key's shard; usage,
                     stats and ping ask every shard and print each one and the total.
  KV_STORE_PASSWORD_FILE  a file holding the store's password (one trailing line break dropped)
  KV_STORE_PASSWORD  the password itself (readable by the same user in /proc/<pid>/environ;
                     prefer the file). One of the two; every shard of a ring shares it.
                     DNS discovery, as the backend: dnssrv+<name> (SRV records, one shard per
                     target host) or dns+<host>:<port> (A/AAAA records, one per address),
                     looked up once; finding none is an error (exit 2).
  KV_STORE_DNS_SERVER  host:port of the DNS server for discovery (default: the system's).
  KV_STORE_TLS=true  TLS to every shard, with KV_STORE_TLS_CA_FILE, KV_STORE_TLS_CERT_FILE and
                     KV_STORE_TLS_KEY_FILE as the backend reads them.

Exit status:
  0 success, 1 not found (get, ttl, expire), 2 error: bad arguments, store unreachable,
  time-out, or an ERROR reply; the reason is printed on stderr.

JSON (--json), one object per reply:
  {"ok":true}                                  set, setex, del, expire
  {"ok":true,"value":"hi","encoding":"utf8"}   get; "encoding":"base64" when the value is not UTF-8
  {"ok":true,"ttl":12}  {"ok":true,"usage":1234}  {"ok":true,"stats":{...}}  {"ok":true,"reply":"PONG"}
  {"ok":false,"notFound":true}
  {"ok":false,"error":"<reason>","kind":"reply|usage|unavailable|timeout|protocol"}

Examples:
  kv set greeting hello world
  kv get greeting
  kv setex session:1 60 -  < token.bin
  KV_STORE=cache.internal:8765 kv stats
  KV_STORE=s0=10.0.0.1:8765,s1=10.0.0.2:8765 kv usage
  kv --store dnssrv+_kv._tcp.kvstore.default.svc.cluster.local usage
`;
}

export function commandHelp(name: string): string | undefined {
  if (name === 'bench') return undefined; // bench has its own --help
  const cmd = findCommand(name);
  if (!cmd) return undefined;
  const aliases = cmd.aliases.length ? `\nAlias: ${cmd.aliases.join(', ')}` : '';
  return `Usage: kv ${cmd.synopsis}\n\n${cmd.summary[0]!.toUpperCase()}${cmd.summary.slice(1)}. ${cmd.details}${aliases}\n`;
}

/** `help` inside the interactive prompt: the protocol, since lines are sent as typed. */
export function replHelp(): string {
  return `Lines are sent to the store as typed (command names are case-insensitive):
  GET <key>                        "value" (decoded), or (nil)
  SET <key> <value>                the value is everything after the key's space
  SETEX <key> <seconds> <value>
  DELETE <key>
  TTL <key>                        TTL <seconds>, TTL -1 (no expiry), or (nil)
  EXPIRE <key> <seconds>
  USAGE   PING   STATS
AUTH is not typed here: kv sends the store's password itself on every connection, from
--password-file, KV_STORE_PASSWORD_FILE or KV_STORE_PASSWORD (kv --help).
Store errors are shown as (error) <reason>. Local commands: help, quit (or exit, Ctrl-D).
With several shards a line with a key goes to the key's shard (the prompt names the shard
that answered); USAGE, PING and STATS go to every shard, a line each, then the total USAGE.
`;
}
