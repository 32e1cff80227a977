import type { GlobalOptions } from '../cli-args.ts';
import { writeOut, type CliIo } from '../cli-io.ts';
import { ExitCode, type ExitStatus } from '../exit-codes.ts';
import { formatBenchReport } from './load-run-report.ts';
import { benchHelp, parseBenchOptions } from './bench-options.ts';
import type { BenchProtocol } from './bench-protocol.ts';
import { lineProtocol } from './line-protocol.ts';
import { runBenchmark } from './bench-runner.ts';
import { ProgressBar } from './progress-bar.ts';

/**
 * `kv bench`: exit status 0 when every reply was right, 2 on errors, wrong replies or
 * failure. Over the store's line protocol; the bench's comparison with Redis passes RESP.
 */
export async function runBenchCommand(argv: readonly string[], global: GlobalOptions, io: CliIo, protocol: BenchProtocol = lineProtocol): Promise<ExitStatus> {
  const options = parseBenchOptions(argv, global, io.env);
  if (options.help) {
    await writeOut(io.stdout, benchHelp());
    return ExitCode.ok;
  }
  const bar = io.stderr.isTTY ? new ProgressBar(io.stderr) : undefined;
  let result;
  try {
    result = await runBenchmark(options, (phase) => bar?.phase(phase), protocol);
  } catch (err) {
    bar?.stop();
    const message = err instanceof Error ? err.message : String(err);
    if (options.json) await writeOut(io.stdout, JSON.stringify({ ok: false, error: message }) + '\n');
    await writeOut(io.stderr, `kv bench: ${message}\n`);
    return ExitCode.error;
  }
  bar?.stop();
  const ok = result.errors === 0 && result.wrongReplies === 0;
  await writeOut(io.stdout, options.json ? JSON.stringify({ ok, ...result }) + '\n' : formatBenchReport(result));
  return ok ? ExitCode.ok : ExitCode.error;
}
