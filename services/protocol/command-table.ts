// The store protocol's commands (SPEC §1), one row each: the one place a command is
// added. The store's parser matches the names (command-parser.ts), the metrics label
// them, the client has a method per row, and the CLI completes and routes them from
// here; test/command-table.test.ts fails when one of those misses a row.

/** What follows the command name on the line. */
export type CommandArgs = 'none' | 'key' | 'key seconds' | 'key value' | 'key seconds value' | 'password';

/**
 * How a client over several shards sends it: to the key's shard, to every shard, or to
 * none, because it belongs to the connection itself (QUIT ends it; AUTH is sent by the
 * client library on every connection it opens, SPEC §8).
 */
export type CommandRouting = 'key' | 'every_shard' | 'connection';

export interface CommandSpec {
  /** Upper-case name; on the wire any case. */
  readonly name: string;
  readonly args: CommandArgs;
  readonly routing: CommandRouting;
  /** The StoreCommands method that sends it (services/client/store-commands.ts), if the client sends it. */
  readonly clientMethod: string | undefined;
}

/** In code order: a command's code is its index (the parser's result, the metrics arrays). */
export const COMMAND_TABLE = [
  { name: 'SET', args: 'key value', routing: 'key', clientMethod: 'set' },
  { name: 'GET', args: 'key', routing: 'key', clientMethod: 'get' },
  { name: 'DELETE', args: 'key', routing: 'key', clientMethod: 'del' },
  { name: 'USAGE', args: 'none', routing: 'every_shard', clientMethod: 'usage' },
  { name: 'QUIT', args: 'none', routing: 'connection', clientMethod: undefined },
  { name: 'PING', args: 'none', routing: 'every_shard', clientMethod: 'ping' },
  { name: 'SETEX', args: 'key seconds value', routing: 'key', clientMethod: 'set' },
  { name: 'EXPIRE', args: 'key seconds', routing: 'key', clientMethod: 'expire' },
  { name: 'TTL', args: 'key', routing: 'key', clientMethod: 'ttl' },
  { name: 'STATS', args: 'none', routing: 'every_shard', clientMethod: 'stats' },
  // The password is the rest of the line, spaces included (SPEC §8).
  { name: 'AUTH', args: 'password', routing: 'connection', clientMethod: undefined },
] as const satisfies readonly CommandSpec[];

export type KnownCommandName = (typeof COMMAND_TABLE)[number]['name'];

/** Names by routing, for clients over several shards. */
export const commandsRoutedBy = (routing: CommandRouting): ReadonlySet<string> =>
  new Set(COMMAND_TABLE.filter((c) => c.routing === routing).map((c) => c.name));
