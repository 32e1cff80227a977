import { pino, type DestinationStream } from 'pino';
import { TurnBatcher } from './turn-batcher.ts';

type SonicBoom = ReturnType<typeof pino.destination>;

/**
 * A pino destination that hands SonicBoom the lines of one event-loop turn as one
 * string. Why: SonicBoom appends every line to its pending string and then measures
 * that whole string's byte length, which flattens it; when a busy turn logs fifty
 * access lines, that is a copy of everything pending per line. Joining a turn's lines
 * once costs one copy (see docs/benchmarks.md#the-http-path). Lines reach SonicBoom
 * at the end of the turn they were logged in (TurnBatcher), in order; flush,
 * flushSync and process exit hand over what is pending first, so nothing is lost.
 */
export class TurnBatchedDestination implements DestinationStream {
  readonly #target: SonicBoom;
  readonly #lines = new TurnBatcher<string>((lines) => {
    holding.delete(this);
    this.#target.write(lines.length === 1 ? lines[0]! : lines.join(''));
  });

  constructor(target: SonicBoom) {
    this.#target = target;
  }

  write(line: string): void {
    this.#lines.add(line);
    if (this.#lines.size === 1) holdingLines(this);
  }

  /** pino's logger.flush(cb). */
  flush(cb?: (err?: Error) => void): void {
    this.#lines.flush();
    this.#target.flush(cb);
  }

  flushSync(): void {
    this.#lines.flush();
    this.#target.flushSync();
  }

  /** At process exit: lines still held here are written synchronously (SonicBoom's own exit flush does not know them). */
  handOverAtExit(): void {
    try {
      this.flushSync();
    } catch {
      // stdout is closed, destroyed or not open yet: nowhere left to write to
    }
  }
}

// The destinations holding lines until the end of this turn, and one exit listener for
// all of them (installed with the first line): a destination holding none is not kept alive.
const holding = new Set<TurnBatchedDestination>();
let exitListenerInstalled = false;
function holdingLines(destination: TurnBatchedDestination): void {
  holding.add(destination);
  if (!exitListenerInstalled) {
    exitListenerInstalled = true;
    process.once('exit', () => {
      for (const d of holding) d.handOverAtExit();
    });
  }
}
