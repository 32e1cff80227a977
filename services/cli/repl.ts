import { createInterface, type Completer } from 'node:readline';
import { StoreUnavailableError } from '../client/errors.ts';
import { StoreConnection } from '../client/store-connection.ts';
import { DEFAULT_TIMEOUT_MS, type GlobalOptions } from './cli-args.ts';
import { writeOut, type CliIo } from './cli-io.ts';
import { ExitCode, type ExitStatus } from './exit-codes.ts';
import { replHelp, commandHelp } from './help-text.ts';
import { historyPath, loadHistory, saveHistory } from './history-file.ts';
import { displayReply } from './reply-display.ts';
import { errorJson, replyLineJson } from './reply-json.ts';
import { formatAddress, resolveStoreAddress } from './store-address.ts';

const PROTOCOL_COMMANDS = ['GET', 'SET', 'SETEX', 'DELETE', 'TTL', 'EXPIRE', 'USAGE', 'PING', 'STATS', 'QUIT'];
const LOCAL_COMMANDS = ['help', 'exit'];

/** Tab completion of the command name (the first word), in the case the user started typing. */
export const completeCommand: Completer = (line: string) => {
  if (line.includes(' ')) return [[], line];
  const lower = line === line.toLowerCase();
  const names = [...PROTOCOL_COMMANDS, ...LOCAL_COMMANDS.map((c) => c.toUpperCase())]
    .filter((c) => c.startsWith(line.toUpperCase()))
    .map((c) => (lower ? c.toLowerCase() : c));
  return [names, line];
};

/**
 * The interactive client: one persistent connection, each line sent as typed, the reply
 * shown decoded. With stdin piped it prints exactly one line per command and nothing
 * else on stdout (notices go to stderr), so it can be scripted.
 *
 * Reconnection is lazy, like redis-cli: when the store went away, the next command
 * opens a new connection (and says so on stderr). A command whose connection is lost
 * before its reply is sent once more on a new connection — every protocol command is
 * idempotent, so the retry cannot do harm. Exit status 2 if any command failed for a
 * transport reason (unreachable, time-out, unexpected reply); `ERROR` replies are
 * output like any reply and leave the status at 0.
 */
export async function runRepl(options: GlobalOptions, io: CliIo): Promise<ExitStatus> {
  const address = resolveStoreAddress(io.env, options.host, options.port);
  const label = formatAddress(address);
  const interactive = Boolean(io.stdin.isTTY);
  const quoted = Boolean(io.stdout.isTTY);
  const conn = new StoreConnection({ ...address, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, reconnect: false });
  const histPath = interactive ? historyPath(io.env) : undefined;
  let history = loadHistory(histPath);

  const rl = createInterface({
    input: io.stdin,
    output: interactive ? (io.stdout.isTTY ? io.stdout : io.stderr) : undefined,
    terminal: interactive,
    prompt: `kv ${label}> `,
    crlfDelay: Infinity,
    ...(interactive ? { completer: completeCommand, history, historySize: 1000, removeHistoryDuplicates: true } : {}),
  });
  // Created now, not at the loop: lines typed while the first connection is opening
  // would otherwise be emitted before anyone listens, and lost.
  const lines = rl[Symbol.asyncIterator]();
  rl.on('history', (h: string[]) => (history = h));
  rl.on('SIGINT', () => rl.close());

  let everConnected = false;
  let transportFailures = 0;
  const notice = (text: string) => writeOut(io.stderr, `kv: ${text}\n`);
  const print = (data: string | Buffer) => writeOut(io.stdout, typeof data === 'string' ? data + '\n' : Buffer.concat([data, Buffer.from('\n')]));

  /** Sends one line; on a lost connection, reconnects and sends it once more. */
  const send = async (line: string): Promise<string> => {
    for (let attempt = 0; ; attempt++) {
      const wasConnected = conn.state === 'connected';
      const reconnecting = everConnected && !wasConnected;
      try {
        const reply = await conn.command(line);
        if (reconnecting) await notice(`connection to ${label} was lost; reconnected`);
        everConnected = true;
        return reply;
      } catch (err) {
        if (attempt === 0 && wasConnected && err instanceof StoreUnavailableError) continue;
        throw err;
      }
    }
  };

  try {
    if (interactive) {
      try {
        await conn.connect();
        everConnected = true;
        await notice(`connected to ${label} (type help for commands, Ctrl-D to leave)`);
      } catch (err) {
        await notice(`${err instanceof Error ? err.message : String(err)} — each command will try again`);
      }
      rl.prompt();
    }
    for await (const line of lines) {
      const trimmed = line.trim();
      const lower = trimmed.toLowerCase();
      if (trimmed === '') {
        // Not a command: nothing to send, nothing to print.
      } else if (lower === 'quit' || lower === 'exit') {
        break;
      } else if (lower === 'help' || lower.startsWith('help ')) {
        const topic = trimmed.slice(4).trim();
        await writeOut(io.stdout, (topic && commandHelp(topic)) || replHelp());
      } else {
        try {
          const reply = await send(line);
          await print(options.json ? JSON.stringify(replyLineJson(reply)) : displayReply(reply, quoted));
        } catch (err) {
          transportFailures++;
          await print(options.json ? JSON.stringify(errorJson(err)) : `(error) ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      if (interactive) rl.prompt();
    }
  } finally {
    rl.close();
    conn.destroy();
    saveHistory(histPath, history);
  }
  return transportFailures > 0 ? ExitCode.error : ExitCode.ok;
}
