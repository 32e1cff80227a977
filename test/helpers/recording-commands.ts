import { StoreCommands, type Payload } from '../../services/client/store-commands.ts';

/** The typed commands over a stand-in transport: records each line sent and answers every one with `reply`. */
export class RecordingCommands extends StoreCommands {
  readonly sent: string[] = [];
  readonly reply: string;

  constructor(reply: string) {
    super();
    this.reply = reply;
  }

  command(payload: Payload): Promise<string> {
    this.sent.push(payload.toString('latin1'));
    return Promise.resolve(this.reply);
  }
}

/** What a promise rejects with (undefined when it resolves). */
export const refusal = (promise: Promise<unknown>): Promise<unknown> => promise.then(() => undefined, (e: unknown) => e);
