import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * A password or other secret, carried through settings and options without being
 * printed: logged, serialised, inspected or turned into a string it says "[redacted]".
 * Only reveal() gives the value, at the one place that sends or compares it.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
