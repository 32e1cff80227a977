// What buf.toString('base64', start, end) and buf.write(text, at, 'latin1') call once they
// have checked and normalised their arguments. On paths run for every store reply that
// normalising is a measurable share of the cost; the callers here pass known-good
// arguments (in range, room already made).

type BufferInternals = Buffer & {
  base64Slice(start: number, end: number): string;
  latin1Write(text: string, at: number): number;
};

/** buf.toString('base64', start, end), unchecked. */
export const base64Slice = (buf: Buffer, start: number, end: number): string => (buf as BufferInternals).base64Slice(start, end);

/** buf.write(text, at, 'latin1'), unchecked; returns the bytes written. */
export const latin1Write = (buf: Buffer, text: string, at: number): number => (buf as BufferInternals).latin1Write(text, at);
