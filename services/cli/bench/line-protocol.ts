import type { BenchProtocol } from './bench-protocol.ts';
import { createLineEncoder } from './command-encoder.ts';
import { LineReplyScanner } from './reply-scanner.ts';

/** The store's line protocol, the one `kv bench` speaks. */
export const benchProtocol: BenchProtocol = {
  name: 'line',
  module: import.meta.url,
  createEncoder: createLineEncoder,
  createScanner: (valueSize) => new LineReplyScanner(valueSize),
};

export { benchProtocol as lineProtocol };
