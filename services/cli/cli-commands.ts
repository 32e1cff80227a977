import type { StoreCommands } from '../client/store-commands.ts';
import { isValidTtlSeconds, MAX_TTL_SECONDS } from '../protocol/limits.ts';
import { REPLY_WORDS } from '../protocol/replies.ts';
import { VALUE_PROBLEM_MESSAGES, valueProblem } from '../protocol/value-rules.ts';
import { NOT_FOUND_JSON, statsJson, valueJson, type ReplyJson } from './reply-json.ts';
import { UsageError } from './usage-error.ts';

export interface CommandContext {
  /** A newline follows a GET value only on a terminal, so `kv get k > file` is exact. */
  readonly stdoutIsTTY: boolean;
  readStdin(): Promise<Buffer>;
}

export interface CommandOutcome {
  readonly found: boolean;
  readonly json: ReplyJson;
  /** stdout in plain mode (exact bytes). */
  readonly output: string | Buffer;
  /** stderr note when not found. */
  readonly note?: string;
}

export interface CliCommand {
  readonly name: string;
  readonly aliases: readonly string[];
  readonly synopsis: string;
  readonly summary: string;
  readonly details: string;
  readonly minArgs: number;
  readonly maxArgs: number;
  /** With several shards: the key's shard (the first argument), or every shard (keyless commands). */
  readonly target: 'key' | 'every shard';
  run(store: StoreCommands, args: readonly string[], ctx: CommandContext): Promise<CommandOutcome>;
}

// `kv` prints the store's own word for a success and for PING's answer.
const OK: CommandOutcome = { found: true, json: { ok: true }, output: `${REPLY_WORDS.ok}\n` };

function notFound(key: string): CommandOutcome {
  return { found: false, json: NOT_FOUND_JSON, output: '', note: `not found: ${key}` };
}

function seconds(raw: string): number {
  // Same rule as the store (decimal digits only, 1 to MAX_TTL_SECONDS), checked before connecting.
  if (!/^\d+$/.test(raw) || !isValidTtlSeconds(Number(raw))) {
    throw new UsageError(`seconds must be an integer from 1 to ${MAX_TTL_SECONDS}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The value of `set`/`setex`: the remaining arguments joined with single spaces, or
 * stdin for a lone `-`. One trailing line break of stdin is dropped (`echo v | kv set k -`):
 * the protocol cannot carry an LF inside a value, so that drop loses nothing. A value the
 * protocol cannot carry (services/protocol/value-rules.ts) is a usage error, before connecting.
 */
async function valueArg(rest: readonly string[], ctx: CommandContext): Promise<Buffer | string> {
  const fromStdin = rest.length === 1 && rest[0] === '-';
  let value: Buffer | string;
  if (fromStdin) {
    value = await ctx.readStdin();
    if (value.length > 0 && value[value.length - 1] === LF) {
      value = value.subarray(0, value.length - (value.length > 1 && value[value.length - 2] === CR ? 2 : 1));
    }
  } else {
    value = rest.join(' ');
  }
  const problem = valueProblem(typeof value === 'string' ? Buffer.from(value, 'utf8') : value);
  if (problem !== undefined) throw new UsageError(`invalid value${fromStdin ? ' on stdin' : ''}: ${VALUE_PROBLEM_MESSAGES[problem]}`);
  return value;
}

/** Every one-off command, in the order `kv --help` lists them. */
export const cliCommands: readonly CliCommand[] = [
  {
    name: 'get',
    aliases: [],
    synopsis: 'get <key>',
    summary: 'print the value',
    details: 'Writes the value\'s bytes to stdout exactly (a newline is added only on a terminal, so `kv get k > file` is byte for byte). Exit status 1 when the key is absent.',
    minArgs: 1,
    maxArgs: 1,
    target: 'key',
    async run(store, [key], ctx) {
      const value = await store.get(key!);
      if (value === null) return notFound(key!);
      return { found: true, json: valueJson(value), output: ctx.stdoutIsTTY ? Buffer.concat([value, Buffer.from('\n')]) : value };
    },
  },
  {
    name: 'set',
    aliases: [],
    synopsis: 'set <key> <value...>',
    summary: 'store a value',
    details: 'The value is the remaining arguments joined with single spaces (`kv set k hello world`). A lone `-` reads the value from stdin, byte for byte, minus one trailing line break. Use `--` before a value that looks like an option.',
    minArgs: 2,
    maxArgs: Infinity,
    target: 'key',
    async run(store, [key, ...rest], ctx) {
      await store.set(key!, await valueArg(rest, ctx));
      return OK;
    },
  },
  {
    name: 'setex',
    aliases: [],
    synopsis: 'setex <key> <seconds> <value...>',
    summary: 'store a value with a time to live',
    details: `As \`set\`, with a time to live of 1 to ${MAX_TTL_SECONDS} seconds.`,
    minArgs: 3,
    maxArgs: Infinity,
    target: 'key',
    async run(store, [key, secs, ...rest], ctx) {
      const ttl = seconds(secs!);
      await store.set(key!, await valueArg(rest, ctx), ttl);
      return OK;
    },
  },
  {
    name: 'del',
    aliases: ['delete'],
    synopsis: 'del <key>',
    summary: 'delete a key',
    details: 'Succeeds whether or not the key existed (deletes are idempotent).',
    minArgs: 1,
    maxArgs: 1,
    target: 'key',
    async run(store, [key]) {
      await store.del(key!);
      return OK;
    },
  },
  {
    name: 'ttl',
    aliases: [],
    synopsis: 'ttl <key>',
    summary: 'print the seconds left to live',
    details: 'Prints the whole seconds left (rounded up), or -1 when the key has no expiry. Exit status 1 when the key is absent.',
    minArgs: 1,
    maxArgs: 1,
    target: 'key',
    async run(store, [key]) {
      const ttl = await store.ttl(key!);
      if (ttl === null) return notFound(key!);
      return { found: true, json: { ok: true, ttl }, output: `${ttl}\n` };
    },
  },
  {
    name: 'expire',
    aliases: [],
    synopsis: 'expire <key> <seconds>',
    summary: 'set a time to live on a key',
    details: 'Exit status 1 when the key is absent.',
    minArgs: 2,
    maxArgs: 2,
    target: 'key',
    async run(store, [key, secs]) {
      const ttl = seconds(secs!);
      return (await store.expire(key!, ttl)) ? OK : notFound(key!);
    },
  },
  {
    name: 'usage',
    aliases: [],
    synopsis: 'usage',
    summary: 'print the bytes held (key bytes + value bytes)',
    details: 'The store\'s USAGE: the sum over entries of key bytes and value bytes.',
    minArgs: 0,
    maxArgs: 0,
    target: 'every shard',
    async run(store) {
      const usage = await store.usage();
      return { found: true, json: { ok: true, usage }, output: `${usage}\n` };
    },
  },
  {
    name: 'ping',
    aliases: [],
    synopsis: 'ping',
    summary: 'check the store answers',
    details: 'Prints PONG.',
    minArgs: 0,
    maxArgs: 0,
    target: 'every shard',
    async run(store) {
      await store.ping();
      return { found: true, json: { ok: true, reply: REPLY_WORDS.pong }, output: `${REPLY_WORDS.pong}\n` };
    },
  },
  {
    name: 'stats',
    aliases: [],
    synopsis: 'stats',
    summary: 'print the store\'s counters',
    details: 'One `name=value` per line (keys, usage_bytes, max_memory_bytes, connections, evictions, expired, hits, misses, uptime_seconds, ...).',
    minArgs: 0,
    maxArgs: 0,
    target: 'every shard',
    async run(store) {
      const stats = await store.stats();
      const lines = Object.entries(stats).map(([k, v]) => `${k}=${v}\n`);
      return { found: true, json: statsJson(stats), output: lines.join('') };
    },
  },
];

export function findCommand(name: string): CliCommand | undefined {
  const n = name.toLowerCase();
  return cliCommands.find((c) => c.name === n || c.aliases.includes(n));
}
