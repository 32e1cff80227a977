/**
 * A setting that cannot work: a value the settings refuse, or a listener its host or
 * port cannot bind. The services print its message and exit 1 instead of a stack trace.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
