// `kv bench` over RESP, the client side of the comparison with Redis: the same load
// generator, options, report and JSON result as `kv bench`, with RESP's encoder and
// reply scanner (resp-protocol.ts) plugged in. `npm run bench` drives Redis with it
// when no kvload is given.
//
//   node bench/redis/resp-bench.ts [kv bench's options]
import { benchHelp } from '../../services/cli/bench/bench-options.ts';
import { runBenchCommand } from '../../services/cli/bench/bench-command.ts';
import { processIo } from '../../services/cli/cli-io.ts';
import { ExitCode } from '../../services/cli/exit-codes.ts';
import { respProtocol } from './resp-protocol.ts';

export const RESP_BENCH_SCRIPT = 'bench/redis/resp-bench.ts';

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help')) {
    process.stdout.write(`Usage: node ${RESP_BENCH_SCRIPT} [options]\n\nkv bench's load generator over RESP (GET and SET as arrays of bulk strings), for Redis.\nIts options are kv bench's:\n\n${benchHelp()}`);
    return ExitCode.ok;
  }
  try {
    return await runBenchCommand(argv, { timeoutMs: undefined, json: false, help: false }, processIo(), respProtocol);
  } catch (err) {
    // Usage mistakes: one line, as kv prints them.
    process.stderr.write(`resp-bench: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.error;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
