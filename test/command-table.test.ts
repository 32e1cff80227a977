// The command table (services/protocol/command-table.ts) is the one place a command is
// added: these checks fail when the parser, the metrics, the client, the CLI's completion
// or its help misses a row, or has a command the table does not.
import { describe, expect, it } from 'vitest';
import { StoreCommands } from '../services/client/store-commands.ts';
import { completeCommand } from '../services/cli/repl.ts';
import { replHelp } from '../services/cli/help-text.ts';
import * as parser from '../services/protocol/command-parser.ts';
import { COMMAND_TABLE, type CommandArgs } from '../services/protocol/command-table.ts';

/** A well-formed line for each argument shape. */
const lineOf = (name: string, args: CommandArgs): string =>
  ({ none: name, key: `${name} k`, 'key seconds': `${name} k 10`, 'key value': `${name} k v`, 'key seconds value': `${name} k 10 v`, password: `${name} a pass word` })[args];

describe('the command table', () => {
  it('the parser knows every command, in any case, with its code and argument shape', () => {
    const out = new parser.ParsedCommand();
    COMMAND_TABLE.forEach((c, code) => {
      for (const name of [c.name, c.name.toLowerCase()]) {
        const line = Buffer.from(lineOf(name, c.args));
        expect(parser.parseCommand(line, 0, line.length, 1024, out), c.name).toBe(parser.OK);
        expect(out.command, c.name).toBe(code);
      }
      // One argument too many is refused, whatever the shape (a value or a password takes the rest of the line).
      if (!c.args.endsWith('value') && c.args !== 'password') {
        const extra = Buffer.from(`${lineOf(c.name, c.args)} extra`);
        expect(parser.parseCommand(extra, 0, extra.length, 1024, out), c.name).toBe(parser.WRONG_NUMBER_OF_ARGUMENTS);
      }
    });
    // The parser's exported codes are the table's rows.
    for (const [code, c] of COMMAND_TABLE.entries()) expect((parser as unknown as Record<string, number>)[c.name], c.name).toBe(code);
    expect(parser.UNKNOWN).toBe(COMMAND_TABLE.length);
    expect(parser.COMMAND_NAMES).toEqual([...COMMAND_TABLE.map((c) => c.name), 'UNKNOWN']);
  });

  it('the client has a method for every command it sends, and sends no command the table lacks', () => {
    const methods = Object.getOwnPropertyNames(StoreCommands.prototype).filter((m) => m !== 'constructor' && typeof (StoreCommands.prototype as never)[m] === 'function');
    for (const c of COMMAND_TABLE) if (c.clientMethod) expect(methods, c.name).toContain(c.clientMethod);
    const fromTable = new Set(COMMAND_TABLE.map((c) => c.clientMethod).filter(Boolean));
    const commandMethods = methods.filter((m) => !['command'].includes(m));
    expect(new Set(commandMethods)).toEqual(fromTable);
  });

  it('the CLI completes every command and its help lists every one', () => {
    const offered = (completeCommand('') as [string[], string])[0].map((n) => n.toUpperCase());
    const help = replHelp();
    for (const c of COMMAND_TABLE) {
      expect(offered, c.name).toContain(c.name);
      if (c.name !== 'QUIT') expect(help, c.name).toMatch(new RegExp(`\\b${c.name}\\b`));
    }
  });
});
