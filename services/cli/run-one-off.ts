import { StoreConnection } from '../client/store-connection.ts';
import { ShardRing } from '../ring/shard-ring.ts';
import type { StoreShard } from '../config/store-list.ts';
import { DEFAULT_TIMEOUT_MS, type GlobalOptions } from './cli-args.ts';
import { findCommand, type CliCommand, type CommandContext } from './cli-commands.ts';
import { readAll, writeOut, type CliIo } from './cli-io.ts';
import { ExitCode, type ExitStatus } from './exit-codes.ts';
import { errorJson } from './reply-json.ts';
import { combineShardOutcomes, type ShardResult } from './shard-outcomes.ts';
import { findStoreTargets, type StoreTargets } from './store-address.ts';
import { UsageError } from './usage-error.ts';
import { resolveCliPassword } from './store-password.ts';
import { resolveCliTls } from './store-tls.ts';

/**
 * Runs one command and prints the reply; returns the exit status. With one store, or a
 * command on a key, one fresh connection: to the store, or to the key's shard on the
 * ring. A keyless command (usage, stats, ping) over several shards asks each of them.
 */
export async function runOneOff(name: string, args: readonly string[], options: GlobalOptions, io: CliIo): Promise<ExitStatus> {
  const connections: StoreConnection[] = [];
  let lookup: StoreTargets['lookup'];
  let password: ReturnType<typeof resolveCliPassword>;
  let tls: ReturnType<typeof resolveCliTls>;
  const open = (shard: StoreShard) => {
    const conn = new StoreConnection({ host: shard.host, port: shard.port, lookup, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, reconnect: false, password, tls });
    connections.push(conn);
    return conn;
  };
  try {
    const cmd = findCommand(name);
    if (!cmd) throw new UsageError(`unknown command ${JSON.stringify(name)} (see kv --help)`);
    if (args.length < cmd.minArgs || args.length > cmd.maxArgs) {
      throw new UsageError(`wrong number of arguments for ${cmd.name}\nusage: kv ${cmd.synopsis}`);
    }
    password = resolveCliPassword(io.env, options.passwordFile);
    tls = resolveCliTls(io.env, options);
    const targets = await findStoreTargets(io.env, options);
    const shards = targets.shards;
    lookup = targets.lookup;
    const ctx: CommandContext = { stdoutIsTTY: Boolean(io.stdout.isTTY), readStdin: () => readAll(io.stdin) };
    if (shards.length > 1 && cmd.target === 'every shard') return await runOnEveryShard(cmd, shards, args, ctx, open, options, io);
    const shard = shards.length === 1 ? shards[0]! : new ShardRing(shards).shardFor(args[0]!);
    const outcome = await cmd.run(open(shard), args, ctx);
    if (options.json) await writeOut(io.stdout, JSON.stringify(outcome.json) + '\n');
    else if (outcome.output.length > 0) await writeOut(io.stdout, outcome.output);
    if (outcome.note) await writeOut(io.stderr, `kv: ${outcome.note}\n`);
    return outcome.found ? ExitCode.ok : ExitCode.notFound;
  } catch (err) {
    if (options.json) await writeOut(io.stdout, JSON.stringify(errorJson(err)) + '\n');
    await writeOut(io.stderr, `kv: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.error;
  } finally {
    for (const conn of connections) conn.destroy();
  }
}

async function runOnEveryShard(
  cmd: CliCommand,
  shards: readonly StoreShard[],
  args: readonly string[],
  ctx: CommandContext,
  open: (shard: StoreShard) => StoreConnection,
  options: GlobalOptions,
  io: CliIo,
): Promise<ExitStatus> {
  const results = await Promise.all(
    shards.map(async (shard): Promise<ShardResult> => {
      try {
        return { shard, outcome: await cmd.run(open(shard), args, ctx) };
      } catch (error) {
        return { shard, error };
      }
    }),
  );
  const combined = combineShardOutcomes(cmd.name, results);
  await writeOut(io.stdout, options.json ? JSON.stringify(combined.json) + '\n' : combined.output);
  for (const failure of combined.failures) await writeOut(io.stderr, `kv: ${failure}\n`);
  if (combined.failures.length > 0 && cmd.name !== 'ping') {
    await writeOut(io.stderr, `kv: the total counts ${shards.length - combined.failures.length} of ${shards.length} shards\n`);
  }
  return combined.failures.length === 0 ? ExitCode.ok : ExitCode.error;
}
