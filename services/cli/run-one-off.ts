import { StoreConnection } from '../client/store-connection.ts';
import { DEFAULT_TIMEOUT_MS, type GlobalOptions } from './cli-args.ts';
import { findCommand } from './cli-commands.ts';
import { readAll, writeOut, type CliIo } from './cli-io.ts';
import { ExitCode, type ExitStatus } from './exit-codes.ts';
import { errorJson } from './reply-json.ts';
import { resolveStoreAddress } from './store-address.ts';
import { UsageError } from './usage-error.ts';

/** Runs one command on a fresh connection: prints the reply, returns the exit status. */
export async function runOneOff(name: string, args: readonly string[], options: GlobalOptions, io: CliIo): Promise<ExitStatus> {
  let conn: StoreConnection | undefined;
  try {
    const cmd = findCommand(name);
    if (!cmd) throw new UsageError(`unknown command ${JSON.stringify(name)} (see kv --help)`);
    if (args.length < cmd.minArgs || args.length > cmd.maxArgs) {
      throw new UsageError(`wrong number of arguments for ${cmd.name}\nusage: kv ${cmd.synopsis}`);
    }
    const address = resolveStoreAddress(io.env, options.host, options.port);
    conn = new StoreConnection({ ...address, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, reconnect: false });
    const outcome = await cmd.run(conn, args, { stdoutIsTTY: Boolean(io.stdout.isTTY), readStdin: () => readAll(io.stdin) });
    if (options.json) await writeOut(io.stdout, JSON.stringify(outcome.json) + '\n');
    else if (outcome.output.length > 0) await writeOut(io.stdout, outcome.output);
    if (outcome.note) await writeOut(io.stderr, `kv: ${outcome.note}\n`);
    return outcome.found ? ExitCode.ok : ExitCode.notFound;
  } catch (err) {
    if (options.json) await writeOut(io.stdout, JSON.stringify(errorJson(err)) + '\n');
    await writeOut(io.stderr, `kv: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.error;
  } finally {
    conn?.destroy();
  }
}
