// What the bearer-token check costs a request, alone: BearerAuth.check on a request whose
// Authorization header holds a token of a table of 20 (the success path, the one every
// served request takes), an unknown token and no header, in ns per check. A benchmark,
// not a test: compare with the server CPU per request of `node bench/http-bench.ts`.
// `node bench/bearer-check.ts [--checks n] [--rounds n]`
import type { IncomingMessage } from 'node:http';
import { BearerAuth } from '../services/backend/bearer-auth.ts';
import { parseTokens } from '../services/config/token-file.ts';
import { median } from './harness/median.ts';
import { numberOption, parseOptions } from './harness/options.ts';

const values = parseOptions('Usage: node bench/bearer-check.ts [--checks n] [--rounds n]', { checks: { type: 'string' }, rounds: { type: 'string' } });
const checks = values.checks ? numberOption('--checks', values.checks, NaN) : 1_000_000;
const rounds = values.rounds ? numberOption('--rounds', values.rounds, NaN) : 7;

const token = 'bench-write-token-0123456789abcdef';
const table = [...Array.from({ length: 19 }, (_, i) => `read bench-read-token-${String(i).padStart(16, '0')}`), `write ${token}`].join('\n');
const auth = new BearerAuth(parseTokens(table, 'bench', 'BACKEND_TOKENS_FILE'));
const request = (authorization: string | undefined) => ({ method: 'GET', headers: authorization === undefined ? {} : { authorization } }) as IncomingMessage;
const cases = { known: request(`Bearer ${token}`), unknown: request('Bearer bench-write-token-0123456789abcdeX'), missing: request(undefined) };

let sink = 0;
for (const [name, req] of Object.entries(cases)) {
  const ns: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < checks; i++) if (auth.check(req) === undefined) sink++;
    ns.push(Number(process.hrtime.bigint() - started) / checks);
  }
  ns.sort((a, b) => a - b);
  process.stdout.write(`${name.padEnd(8)} ${median(ns)!.toFixed(0)} ns per check (rounds ${ns[0]!.toFixed(0)}-${ns.at(-1)!.toFixed(0)})\n`);
}
if (sink < 0) process.stdout.write('');
