import type { CommandEncoder } from './command-encoder.ts';
import type { ReplyScanner } from './reply-scanner.ts';

/**
 * What the load generator needs of a wire protocol: the bytes of its GET and SET, and a
 * scanner that counts the replies. `kv bench` speaks the store's line protocol
 * (line-protocol.ts); the comparison with Redis plugs RESP in from outside the product.
 */
export interface BenchProtocol {
  /** Its name in results: `line` for the store's. */
  readonly name: string;
  /**
   * The URL of a module that exports this protocol as `benchProtocol`: worker threads
   * (--threads) import it there, since a protocol's functions cannot be posted to them.
   */
  readonly module: string;
  createEncoder(valueSize: number): CommandEncoder;
  createScanner(valueSize: number): ReplyScanner;
}
