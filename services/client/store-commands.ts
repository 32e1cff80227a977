import { isValidKey } from '../protocol/key-rules.ts';
import { isValidTtlSeconds, MAX_KEY_BYTES, MAX_TTL_SECONDS } from '../protocol/limits.ts';
import { decodeReply, type Reply } from '../protocol/replies.ts';
import { VALUE_PROBLEM_MESSAGES, valueProblem } from '../protocol/value-rules.ts';
import { StoreArgumentError, StoreProtocolError, StoreReplyError } from './errors.ts';

/** A request's payload: the line without its LF (a Buffer when the value is binary). */
export type Payload = string | Buffer;

export type CommandResult = 'ok' | 'not_found' | 'error';

/** Told about every typed command, for metrics (the backend's kvbackend_store_* series). */
export type CommandObserver = (command: string, result: CommandResult, seconds: number, error?: unknown) => void;

// Each check returns the refusal (or undefined): a command rejects with it, never throws.

function checkKey(key: string): StoreArgumentError | undefined {
  // A key with a space or a line break would split into extra arguments or commands.
  if (!isValidKey(key)) return new StoreArgumentError('invalid_key', `invalid key: 1 to ${MAX_KEY_BYTES} bytes of UTF-8, no spaces or control characters`);
  return undefined;
}

function checkValue(value: Buffer): StoreArgumentError | undefined {
  const problem = valueProblem(value);
  return problem === undefined ? undefined : new StoreArgumentError('invalid_value', `invalid value: ${VALUE_PROBLEM_MESSAGES[problem]}`);
}

function checkSeconds(seconds: number): StoreArgumentError | undefined {
  if (!isValidTtlSeconds(seconds)) return new StoreArgumentError('invalid_seconds', `seconds must be an integer from 1 to ${MAX_TTL_SECONDS}`);
  return undefined;
}

function unexpected(command: string, reply: string): StoreProtocolError {
  return new StoreProtocolError(`unexpected reply to ${command}: ${JSON.stringify(reply.slice(0, 80))}`);
}

/**
 * The typed commands of the protocol, on top of any transport that can send one line
 * and resolve with the reply line (a single connection or a pool). It validates
 * arguments before anything is sent, so no caller can smuggle a second command.
 */
export abstract class StoreCommands {
  observer: CommandObserver | undefined;

  /** Sends one command line (no LF) and resolves with the raw reply line. */
  abstract command(payload: Payload): Promise<string>;

  /** Sends the command and reads its reply with the protocol's decoder; `interpret` throws on a reply the command does not expect. */
  async #run<T>(name: string, payload: Payload, interpret: (reply: Reply, line: string) => [CommandResult, T]): Promise<T> {
    const started = this.observer ? performance.now() : 0;
    try {
      const line = await this.command(payload);
      const reply = decodeReply(line);
      if (reply.kind === 'error') throw new StoreReplyError(reply.reason);
      const [result, value] = interpret(reply, line);
      this.observer?.(name, result, (performance.now() - started) / 1000);
      return value;
    } catch (err) {
      this.observer?.(name, 'error', (performance.now() - started) / 1000, err);
      throw err;
    }
  }

  /** The value's bytes, or null when the key is absent. */
  get(key: string): Promise<Buffer | null> {
    const refused = checkKey(key);
    if (refused) return Promise.reject(refused);
    return this.#run('GET', `GET ${key}`, (reply, line) => {
      if (reply.kind === 'not_found') return ['not_found', null];
      if (reply.kind !== 'value') throw unexpected('GET', line);
      return ['ok', reply.value];
    });
  }

  /** SET, or SETEX when ttlSeconds is given. */
  set(key: string, value: Buffer | string, ttlSeconds?: number): Promise<void> {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    const refused = checkKey(key) ?? checkValue(bytes) ?? (ttlSeconds === undefined ? undefined : checkSeconds(ttlSeconds));
    if (refused) return Promise.reject(refused);
    let head: string;
    let name: string;
    if (ttlSeconds === undefined) {
      head = `SET ${key} `;
      name = 'SET';
    } else {
      head = `SETEX ${key} ${ttlSeconds} `;
      name = 'SETEX';
    }
    const payload = typeof value === 'string' ? head + value : Buffer.concat([Buffer.from(head, 'utf8'), bytes]);
    return this.#run(name, payload, (reply, line) => {
      if (reply.kind !== 'ok') throw unexpected(name, line);
      return ['ok', undefined];
    });
  }

  del(key: string): Promise<void> {
    const refused = checkKey(key);
    if (refused) return Promise.reject(refused);
    return this.#run('DELETE', `DELETE ${key}`, (reply, line) => {
      if (reply.kind !== 'ok') throw unexpected('DELETE', line);
      return ['ok', undefined];
    });
  }

  /** Bytes held by the store (key bytes + value bytes). */
  usage(): Promise<number> {
    return this.#run('USAGE', 'USAGE', (reply, line) => {
      if (reply.kind !== 'usage') throw unexpected('USAGE', line);
      return ['ok', reply.bytes];
    });
  }

  ping(): Promise<void> {
    return this.#run('PING', 'PING', (reply, line) => {
      if (reply.kind !== 'pong') throw unexpected('PING', line);
      return ['ok', undefined];
    });
  }

  /** Seconds left (rounded up), -1 when the key has no expiry, null when absent. */
  ttl(key: string): Promise<number | null> {
    const refused = checkKey(key);
    if (refused) return Promise.reject(refused);
    return this.#run('TTL', `TTL ${key}`, (reply, line) => {
      if (reply.kind === 'not_found') return ['not_found', null];
      if (reply.kind !== 'ttl') throw unexpected('TTL', line);
      return ['ok', reply.seconds];
    });
  }

  /** True when the key exists and now expires in `seconds`. */
  expire(key: string, seconds: number): Promise<boolean> {
    const refused = checkKey(key) ?? checkSeconds(seconds);
    if (refused) return Promise.reject(refused);
    return this.#run('EXPIRE', `EXPIRE ${key} ${seconds}`, (reply, line) => {
      if (reply.kind === 'not_found') return ['not_found', false];
      if (reply.kind !== 'ok') throw unexpected('EXPIRE', line);
      return ['ok', true];
    });
  }

  stats(): Promise<Record<string, string>> {
    return this.#run('STATS', 'STATS', (reply, line) => {
      if (reply.kind !== 'stats') throw unexpected('STATS', line);
      return ['ok', { ...reply.stats }];
    });
  }
}
