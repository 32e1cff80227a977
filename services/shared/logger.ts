import { pino, type DestinationStream, type Logger } from 'pino';
import { TurnBatchedDestination } from './turn-batched-destination.ts';

export type { Logger };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface LoggerOptions {
  readonly name: string;
  readonly level: LogLevel;
  /** Where JSON lines go; by default stdout, each event-loop turn's lines in one write. Tests pass a sink and parse the lines. */
  readonly destination?: DestinationStream;
}

export function createLogger({ name, level, destination }: LoggerOptions): Logger {
  return pino({ name, level, base: { service: name } }, destination ?? new TurnBatchedDestination(pino.destination({ sync: false })));
}
