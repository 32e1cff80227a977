import { REPLY_WORDS } from '../protocol/replies.ts';
import type { StoreShard } from '../config/store-list.ts';
import type { CommandOutcome } from './cli-commands.ts';
import { errorJson, type ReplyJson } from './reply-json.ts';

// `kv usage`, `kv stats` and `kv ping` over several shards (SPEC §6): one answer per
// shard, then the total. A shard that fails is reported on stderr and the rest still
// print; the total then covers the shards that answered, and the exit status says 2.

export type ShardResult =
  | { readonly shard: StoreShard; readonly outcome: CommandOutcome }
  | { readonly shard: StoreShard; readonly error: unknown };

export interface CombinedOutcome {
  /** stdout in plain mode. */
  readonly output: string;
  readonly json: ReplyJson;
  /** One stderr line per shard that failed. */
  readonly failures: readonly string[];
}

/** STATS fields that are not summed: a total of uptimes means nothing. */
const NOT_ADDITIVE = new Set(['uptime_seconds']);

export function combineShardOutcomes(command: string, results: readonly ShardResult[]): CombinedOutcome {
  const width = Math.max(...results.map((r) => r.shard.name.length), 'total'.length) + 2;
  const failures: string[] = [];
  const shardsJson: ReplyJson[] = [];
  const answered: { shard: StoreShard; json: ReplyJson }[] = [];
  for (const r of results) {
    if ('error' in r) {
      failures.push(`${r.shard.name}: ${r.error instanceof Error ? r.error.message : String(r.error)}`);
      shardsJson.push({ shard: r.shard.name, ...errorJson(r.error) });
    } else {
      answered.push({ shard: r.shard, json: r.outcome.json });
    }
  }
  const ok = failures.length === 0;
  const complete = (json: ReplyJson, perShard: (j: ReplyJson) => ReplyJson): ReplyJson => ({
    ...json,
    ok,
    shards: [...answered.map((a) => ({ shard: a.shard.name, ...perShard(a.json) })), ...shardsJson],
  });

  if (command === 'usage') {
    const total = answered.reduce((sum, a) => sum + (a.json.usage as number), 0);
    const lines = answered.map((a) => `${a.shard.name.padEnd(width)}${a.json.usage as number}\n`);
    return { output: lines.join('') + `${'total'.padEnd(width)}${total}\n`, json: complete({ usage: total }, (j) => ({ usage: j.usage })), failures };
  }
  if (command === 'stats') {
    const perShard = answered.map((a) => ({ shard: a.shard, stats: a.json.stats as Record<string, number | string> }));
    const total = totalStats(perShard.map((p) => p.stats));
    const section = (title: string, stats: Record<string, number | string>) =>
      `[${title}]\n` + Object.entries(stats).map(([k, v]) => `${k}=${v}\n`).join('');
    const output = perShard.map((p) => section(p.shard.name, p.stats)).join('') + section('total', total);
    return { output, json: complete({ stats: total }, (j) => ({ stats: j.stats })), failures };
  }
  // ping, and any other keyless reply: each shard's answer
  const lines = answered.map((a) => `${a.shard.name.padEnd(width)}${String(a.json.reply)}\n`);
  return { output: lines.join(''), json: complete({ reply: REPLY_WORDS.pong }, (j) => ({ reply: j.reply })), failures };
}

/** Numeric fields summed (uptime aside); a text field kept when every shard agrees. */
export function totalStats(all: readonly Record<string, number | string>[]): Record<string, number | string> {
  const total: Record<string, number | string> = {};
  const fields = [...new Set(all.flatMap((s) => Object.keys(s)))];
  for (const field of fields) {
    if (NOT_ADDITIVE.has(field)) continue;
    const values = all.map((s) => s[field]);
    if (values.every((v) => typeof v === 'number')) total[field] = (values as number[]).reduce((a, b) => a + b, 0);
    else if (values.every((v) => v === values[0])) total[field] = values[0]!;
  }
  return total;
}
