/** A mistake on the command line: reported on stderr with a hint, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
