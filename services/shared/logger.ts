import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.ts';

export type { Logger };

export interface LoggerOptions {
  readonly name: string;
  readonly level: LogLevel;
  /** Where JSON lines go; stdout by default. Tests pass a sink and parse the lines. */
  readonly destination?: DestinationStream;
}

export function createLogger({ name, level, destination }: LoggerOptions): Logger {
  return pino({ name, level, base: { service: name } }, destination ?? pino.destination({ sync: false }));
}
