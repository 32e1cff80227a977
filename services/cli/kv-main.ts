import { runBenchCommand } from './bench/bench-command.ts';
import { parseArgs } from './cli-args.ts';
import { processIo, writeOut, type CliIo } from './cli-io.ts';
import { ExitCode, type ExitStatus } from './exit-codes.ts';
import { commandHelp, generalHelp } from './help-text.ts';
import { runOneOff } from './run-one-off.ts';
import { runRepl } from './repl.ts';

/** The `kv` command: parses argv and dispatches; resolves with the exit status. */
export async function runKv(argv: readonly string[], io: CliIo = processIo()): Promise<ExitStatus> {
  try {
    const { options, command, args } = parseArgs(argv);
    if (command === 'bench') return await runBenchCommand(args, options, io);
    if (options.help || command === 'help') {
      const topic = command === 'help' ? args[0] : command;
      if (topic === 'bench') return await runBenchCommand(['--help'], options, io);
      const text = topic === undefined ? generalHelp() : commandHelp(topic);
      if (text === undefined) {
        await writeOut(io.stderr, `kv: unknown command ${JSON.stringify(topic)} (see kv --help)\n`);
        return ExitCode.error;
      }
      await writeOut(io.stdout, text);
      return ExitCode.ok;
    }
    if (command === undefined) return await runRepl(options, io);
    return await runOneOff(command, args, options, io);
  } catch (err) {
    // Usage mistakes and anything unforeseen: one line, never a stack trace.
    await writeOut(io.stderr, `kv: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.error;
  }
}
