// What a value may hold, in one place (SPEC §1: "any bytes but LF"). A SET value is the
// rest of its line, so two bytes cannot travel in it:
// - an LF anywhere ends the command there (the rest would run as a second command);
// - a CR as the last byte is taken by the store's framer as part of the line end
//   (line-framer.ts drops a CR right before the LF), so the value would be stored one
//   byte short.
// A CR anywhere else is carried and returned exactly. The client library and `kv` refuse
// exactly what cannot travel, before anything is sent. The HTTP backend refuses every CR
// as well: SPEC §2 decides that a body with CR or LF is 400 at the public face.

const LF = 0x0a;
const CR = 0x0d;

/** Why a value cannot be stored as given. */
export type ValueProblem = 'line_feed' | 'trailing_carriage_return' | 'carriage_return';

/** One sentence per problem, for the errors of every entry point. */
export const VALUE_PROBLEM_MESSAGES: Readonly<Record<ValueProblem, string>> = Object.freeze({
  line_feed: 'the value contains a line feed (LF), which would end the command there',
  trailing_carriage_return: 'the value ends with a carriage return (CR), which the store would drop with the line end',
  carriage_return: 'the value contains a carriage return (CR), which the HTTP API refuses',
});

/** The protocol's rule: why `value` cannot travel as a SET value, or undefined when it can. */
export function valueProblem(value: Uint8Array): ValueProblem | undefined {
  if (value.includes(LF)) return 'line_feed';
  if (value.length > 0 && value[value.length - 1] === CR) return 'trailing_carriage_return';
  return undefined;
}

/** The backend's rule for a request body: the protocol's, and no CR anywhere (SPEC §2). */
export function httpBodyProblem(body: Uint8Array): ValueProblem | undefined {
  return valueProblem(body) ?? (body.includes(CR) ? 'carriage_return' : undefined);
}
