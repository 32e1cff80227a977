// The line each service logs once it listens, and the one reader of it. Tests and the
// bench harness start a service and wait for this line, so its message and the fields it
// carries are an interface: the services and their callers take both from here.

/** The store's ready message: its JSON log line carries port, metricsPort, host and its settings. */
export const STORE_READY = 'kvstore ready';
/** The backend's ready message: its JSON log line carries port, metricsPort, host and its store list. */
export const BACKEND_READY = 'kvbackend ready';

export type ReadyMessage = typeof STORE_READY | typeof BACKEND_READY;

/** The fields of a ready line: the ports every caller needs, and whatever else the service logged. */
export interface ReadyFields {
  readonly port: number;
  readonly metricsPort: number;
  readonly [field: string]: unknown;
}

/** One JSON log line as an object; undefined for any other line. */
export function parseLogLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const entry: unknown = JSON.parse(line);
    return typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? (entry as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The fields of `line` when it is the ready line `msg` (STORE_READY or BACKEND_READY); undefined for any other line. */
export function parseReadyLine(line: string, msg: string): ReadyFields | undefined {
  const entry = parseLogLine(line);
  if (entry?.msg !== msg || typeof entry.port !== 'number') return undefined;
  return entry as ReadyFields;
}
