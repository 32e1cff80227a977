import type { LookupFunction } from 'node:net';
import { StoreUnavailableError } from '../client/errors.ts';
import { commandsRoutedBy } from '../protocol/command-table.ts';
import { StoreConnection } from '../client/store-connection.ts';
import type { ClientTls } from '../client/client-tls.ts';
import type { Secret } from '../shared/secret.ts';
import { ShardRing } from '../ring/shard-ring.ts';
import type { StoreShard } from '../config/store-list.ts';

/** Commands whose second token is a key: they go to the key's shard. */
const KEYED = commandsRoutedBy('key');
/** Keyless commands that every shard answers for itself. */
const EVERY_SHARD = commandsRoutedBy('every_shard');

export interface ShardLink {
  readonly shard: StoreShard;
  /** What the prompt and notices call this shard. */
  readonly label: string;
  readonly conn: StoreConnection;
  everConnected: boolean;
}

/**
 * The prompt's connections: one per shard, opened on first use. A line with a key goes
 * to the key's shard on the ring; USAGE, PING and STATS (no arguments) go to every shard;
 * anything else (a typo, a missing key) to the first shard, which answers the error.
 */
export class ReplShards {
  readonly links: readonly ShardLink[];
  readonly #ring: ShardRing<StoreShard>;
  readonly #byName = new Map<string, ShardLink>();

  constructor(shards: readonly StoreShard[], timeoutMs: number, singleLabel: string, lookup?: LookupFunction, password?: Secret, tls?: ClientTls) {
    this.#ring = new ShardRing(shards);
    this.links = shards.map((shard) => ({
      shard,
      label: shards.length === 1 ? singleLabel : shard.name,
      conn: new StoreConnection({ host: shard.host, port: shard.port, lookup, timeoutMs, reconnect: false, password, tls }),
      everConnected: false,
    }));
    for (const link of this.links) this.#byName.set(link.shard.name, link);
  }

  /** Where a line goes: one shard, or every shard. */
  route(line: string): ShardLink | 'every shard' {
    if (this.links.length === 1) return this.links[0]!;
    const space = line.indexOf(' ');
    const command = (space < 0 ? line : line.slice(0, space)).toUpperCase();
    if (space < 0 && EVERY_SHARD.has(command)) return 'every shard';
    if (space > 0 && KEYED.has(command)) {
      const end = line.indexOf(' ', space + 1);
      const key = line.slice(space + 1, end < 0 ? line.length : end);
      if (key !== '') return this.#byName.get(this.#ring.shardFor(key).name)!;
    }
    return this.links[0]!;
  }

  /**
   * Sends one line to a shard; when a connection that was up is lost before the reply,
   * reconnects and sends it once more (every protocol command is idempotent).
   * `reconnected` is called when a shard that had answered before answers again.
   */
  async send(link: ShardLink, line: string, reconnected: (link: ShardLink) => Promise<void>): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const wasConnected = link.conn.state === 'connected';
      const reconnecting = link.everConnected && !wasConnected;
      try {
        const reply = await link.conn.command(line);
        if (reconnecting) await reconnected(link);
        link.everConnected = true;
        return reply;
      } catch (err) {
        if (attempt === 0 && wasConnected && err instanceof StoreUnavailableError) continue;
        throw err;
      }
    }
  }

  destroy(): void {
    for (const link of this.links) link.conn.destroy();
  }
}
