/** Exit statuses of `kv` (documented in `kv --help`): scripts branch on them. */
export const ExitCode = {
  ok: 0,
  /** GET, TTL or EXPIRE of an absent key. */
  notFound: 1,
  /** Bad arguments, store unreachable, time-out, an `ERROR` reply, a wrong reply. */
  error: 2,
} as const;

export type ExitStatus = (typeof ExitCode)[keyof typeof ExitCode];
