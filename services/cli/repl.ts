import { createInterface, type Completer } from 'node:readline';
import { COMMAND_TABLE } from '../protocol/command-table.ts';
import { decodeReply, REPLY_WORDS } from '../protocol/replies.ts';
import { DEFAULT_TIMEOUT_MS, type GlobalOptions } from './cli-args.ts';
import { writeOut, type CliIo } from './cli-io.ts';
import { ExitCode, type ExitStatus } from './exit-codes.ts';
import { replHelp, commandHelp } from './help-text.ts';
import { historyPath, loadHistory, saveHistory } from './history-file.ts';
import { displayReply } from './reply-display.ts';
import { errorJson, replyLineJson } from './reply-json.ts';
import { ReplShards, type ShardLink } from './repl-shards.ts';
import { resolveCliPassword } from './store-password.ts';
import { resolveCliTls } from './store-tls.ts';
import { findStoreTargets, formatAddress } from './store-address.ts';

const PROTOCOL_COMMANDS = COMMAND_TABLE.map((c) => c.name);
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
 * The interactive client: one persistent connection per shard (ReplShards), each line
 * sent as typed to the shard it belongs to, the reply shown decoded. With stdin piped it
 * prints exactly one line per command and nothing else on stdout (notices go to stderr),
 * so it can be scripted.
 *
 * Reconnection is lazy, like redis-cli: when the store went away, the next command
 * opens a new connection (and says so on stderr). A command whose connection is lost
 * before its reply is sent once more on a new connection — every protocol command is
 * idempotent, so the retry cannot do harm. Exit status 2 if any command failed for a
 * transport reason (unreachable, time-out, unexpected reply); `ERROR` replies are
 * output like any reply and leave the status at 0.
 */
export async function runRepl(options: GlobalOptions, io: CliIo): Promise<ExitStatus> {
  const { shards: storeList, lookup } = await findStoreTargets(io.env, options);
  const password = resolveCliPassword(io.env, options.passwordFile);
  const tls = resolveCliTls(io.env, options);
  const shards = new ReplShards(storeList, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, formatAddress(storeList[0]!), lookup, password, tls);
  const everyLabel = `${storeList.length} shards`;
  const startLabel = storeList.length === 1 ? shards.links[0]!.label : everyLabel;
  const interactive = Boolean(io.stdin.isTTY);
  const quoted = Boolean(io.stdout.isTTY);
  const histPath = interactive ? historyPath(io.env) : undefined;
  let history = loadHistory(histPath);

  const rl = createInterface({
    input: io.stdin,
    output: interactive ? (io.stdout.isTTY ? io.stdout : io.stderr) : undefined,
    terminal: interactive,
    prompt: `kv ${startLabel}> `,
    crlfDelay: Infinity,
    ...(interactive ? { completer: completeCommand, history, historySize: 1000, removeHistoryDuplicates: true } : {}),
  });
  // Created now, not at the loop: lines typed while the first connection is opening
  // would otherwise be emitted before anyone listens, and lost.
  const lines = rl[Symbol.asyncIterator]();
  rl.on('history', (h: string[]) => (history = h));
  rl.on('SIGINT', () => rl.close());

  let transportFailures = 0;
  const notice = (text: string) => writeOut(io.stderr, `kv: ${text}\n`);
  const print = (data: string | Buffer) => writeOut(io.stdout, typeof data === 'string' ? data + '\n' : Buffer.concat([data, Buffer.from('\n')]));
  const reconnected = (link: ShardLink) => notice(`connection to ${link.label} was lost; reconnected`);

  /** One shard's reply, as the prompt shows it. */
  const runOn = async (link: ShardLink, line: string) => {
    try {
      const reply = await shards.send(link, line, reconnected);
      await print(options.json ? JSON.stringify(replyLineJson(reply)) : displayReply(reply, quoted));
    } catch (err) {
      transportFailures++;
      await print(options.json ? JSON.stringify(errorJson(err)) : `(error) ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  /** USAGE, PING, STATS over several shards: a line per shard (then the total USAGE), or one JSON object. */
  const runOnEvery = async (line: string) => {
    type Answer = { link: ShardLink; reply: string } | { link: ShardLink; error: unknown };
    const answers = await Promise.all(
      shards.links.map(async (link): Promise<Answer> => {
        try {
          return { link, reply: await shards.send(link, line, reconnected) };
        } catch (error) {
          transportFailures++;
          return { link, error };
        }
      }),
    );
    const usages = answers.map((a) => {
      const reply = 'reply' in a ? decodeReply(a.reply) : undefined;
      return reply?.kind === 'usage' ? reply.bytes : undefined;
    });
    const total = usages.every((u) => u !== undefined) ? usages.reduce((sum, u) => sum + u, 0) : undefined;
    if (options.json) {
      const perShard = answers.map((a): Record<string, unknown> => ({ shard: a.link.label, ...('reply' in a ? replyLineJson(a.reply) : errorJson(a.error)) }));
      await print(JSON.stringify({ ok: perShard.every((p) => p.ok === true), ...(total !== undefined ? { usage: total } : {}), shards: perShard }));
      return;
    }
    const width = Math.max(...shards.links.map((l) => l.label.length), 5) + 2;
    for (const a of answers) {
      const shown = 'reply' in a ? displayReply(a.reply, quoted) : `(error) ${a.error instanceof Error ? a.error.message : String(a.error)}`;
      await print(typeof shown === 'string' ? a.link.label.padEnd(width) + shown : Buffer.concat([Buffer.from(a.link.label.padEnd(width)), shown]));
    }
    if (total !== undefined) await print(`${'total'.padEnd(width)}${REPLY_WORDS.usage} ${total}`);
  };

  try {
    if (interactive) {
      const connected: string[] = [];
      for (const link of shards.links) {
        try {
          await link.conn.connect();
          link.everConnected = true;
          connected.push(link.label);
        } catch (err) {
          await notice(`${link.label}: ${err instanceof Error ? err.message : String(err)} — each command will try again`);
        }
      }
      if (connected.length > 0) {
        const to = storeList.length === 1 ? connected[0] : `${connected.length} of ${storeList.length} shards (${connected.join(', ')})`;
        await notice(`connected to ${to} (type help for commands, Ctrl-D to leave)`);
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
      } else if (lower === 'auth' || lower.startsWith('auth ')) {
        // Never sent nor kept: a password typed here would land in the history file.
        await notice('AUTH is sent by kv itself: give the password with --password-file, KV_STORE_PASSWORD_FILE or KV_STORE_PASSWORD');
      } else if (lower === 'help' || lower.startsWith('help ')) {
        const topic = trimmed.slice(4).trim();
        await writeOut(io.stdout, (topic && commandHelp(topic)) || replHelp());
      } else {
        const target = shards.route(line);
        if (target === 'every shard') await runOnEvery(line);
        else await runOn(target, line);
        // the prompt names the shard that answered
        rl.setPrompt(`kv ${target === 'every shard' ? everyLabel : target.label}> `);
      }
      if (interactive) rl.prompt();
    }
  } finally {
    rl.close();
    shards.destroy();
    saveHistory(histPath, history.filter((l) => !/^\s*auth(\s|$)/i.test(l)));
  }
  return transportFailures > 0 ? ExitCode.error : ExitCode.ok;
}
