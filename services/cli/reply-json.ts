import { isUtf8 } from 'node:buffer';
import { errorKind, StoreArgumentError, StoreReplyError } from '../client/errors.ts';
import { decodeReply } from '../protocol/replies.ts';
import { UsageError } from './usage-error.ts';

/**
 * The JSON shapes `--json` prints, one object per reply (documented in `kv --help`):
 *   {"ok":true}                                   OK (SET, SETEX, DEL, EXPIRE)
 *   {"ok":true,"value":"hi","encoding":"utf8"}    GET; "encoding":"base64" when the bytes are not UTF-8
 *   {"ok":true,"ttl":12}                          TTL (-1: no expiry)
 *   {"ok":true,"usage":1234}                      USAGE
 *   {"ok":true,"stats":{"keys":3,...}}            STATS (numeric values as numbers)
 *   {"ok":true,"reply":"PONG"}                    any other reply line, verbatim
 *   {"ok":false,"notFound":true}                  NOT_FOUND (exit status 1)
 *   {"ok":false,"error":"invalid key","kind":"reply"}   kind: reply (the store said ERROR),
 *        usage (bad arguments), unavailable, timeout, protocol (exit status 2)
 */
export type ReplyJson = Record<string, unknown>;

export function valueJson(value: Buffer): ReplyJson {
  return isUtf8(value)
    ? { ok: true, value: value.toString('utf8'), encoding: 'utf8' }
    : { ok: true, value: value.toString('base64'), encoding: 'base64' };
}

export const NOT_FOUND_JSON: ReplyJson = Object.freeze({ ok: false, notFound: true });

export function statsJson(stats: Readonly<Record<string, string>>): ReplyJson {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(stats)) out[k] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  return { ok: true, stats: out };
}

export type ErrorKind = 'reply' | 'usage' | 'unavailable' | 'timeout' | 'protocol';

export function errorKindOf(err: unknown): ErrorKind {
  if (err instanceof StoreReplyError) return 'reply';
  if (err instanceof UsageError || err instanceof StoreArgumentError || err instanceof RangeError) return 'usage';
  return errorKind(err);
}

export function errorJson(err: unknown): ReplyJson {
  const kind = errorKindOf(err);
  const error = err instanceof StoreReplyError ? err.reason : err instanceof Error ? err.message : String(err);
  return { ok: false, error, kind };
}

/** A raw reply line of the protocol as JSON (the interactive client with --json). */
export function replyLineJson(line: string): ReplyJson {
  const reply = decodeReply(line);
  switch (reply.kind) {
    case 'ok':
      return { ok: true };
    case 'not_found':
      return NOT_FOUND_JSON;
    case 'error':
      return { ok: false, error: reply.reason, kind: 'reply' };
    case 'value':
      return valueJson(reply.value);
    case 'ttl':
      return { ok: true, ttl: reply.seconds };
    case 'usage':
      return { ok: true, usage: reply.bytes };
    case 'stats':
      return statsJson(reply.stats);
    default:
      return { ok: true, reply: line };
  }
}
