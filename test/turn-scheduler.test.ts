// The store's turn scheduler with stand-in connections: what a turn end runs, in what
// order, and how the turn's time for pipelined work puts connections in line.
import { describe, expect, it } from 'vitest';
import { TurnScheduler, type TurnWork } from '../services/store/turn-scheduler.ts';

const turnEnd = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A connection that logs what the scheduler asks of it and, like ClientConnection, asks for its turn end after running. */
class StandIn implements TurnWork {
  turnQueues = 0;
  /** Set to make its next endTurn put it in line again (lines left after its slice). */
  again = false;

  readonly name: string;
  readonly turns: () => TurnScheduler;
  readonly log: string[];

  constructor(name: string, turns: () => TurnScheduler, log: string[]) {
    this.name = name;
    this.turns = turns;
    this.log = log;
  }

  endTurn(): void {
    this.log.push(`end ${this.name}`);
    if (this.again) {
      this.again = false;
      this.turns().inLaterTurn(this);
    }
  }

  runHeldRead(): void {
    this.log.push(`held ${this.name}`);
    this.turns().atEndOfTurn(this);
  }

  resumeTurn(): void {
    this.log.push(`resume ${this.name}`);
    this.turns().atEndOfTurn(this);
  }
}

function setUp(budgetMs: number) {
  const log: string[] = [];
  const turns = new TurnScheduler({ before: () => performance.now(), after: () => {} }, budgetMs);
  const work = (name: string) => new StandIn(name, () => turns, log);
  return { log, turns, work };
}

describe('TurnScheduler', () => {
  it('the first pipelined work of a turn may run, more only within the turn’s budget, and none while work waits in line', async () => {
    const { turns, work } = setUp(5);
    expect(turns.mayRun(100)).toBe(true);
    expect(turns.mayRun(104.9)).toBe(true);
    expect(turns.mayRun(105)).toBe(false);
    turns.atEndOfTurn(work('a'));
    await turnEnd();
    expect(turns.mayRun(200)).toBe(true); // a new turn, a new budget
    turns.inLaterTurn(work('b'));
    expect(turns.mayRun(200)).toBe(false);
    await turnEnd();
    expect(turns.mayRun(300)).toBe(true);
  });

  it('a turn end runs the held reads and writes every reply of the turn before the work in line runs', async () => {
    const { log, turns, work } = setUp(Infinity);
    const [a, b, h, r] = ['a', 'b', 'h', 'r'].map(work);
    turns.inLaterTurn(a!);
    turns.inLaterTurn(b!);
    turns.atEndOfTurn(r!); // ran in the poll phase
    turns.runHeldAtEndOfTurn(h!);
    await turnEnd();
    expect(log).toEqual(['held h', 'end r', 'end h', 'resume a', 'resume b', 'end a', 'end b']);
  });

  it('work in line runs from the head: the first whatever the budget, the others while it lasts; the rest keep their places', async () => {
    const { log, turns, work } = setUp(0);
    for (const w of ['a', 'b', 'c'].map(work)) turns.inLaterTurn(w);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a']);
    turns.inLaterTurn(work('d')); // behind those already in line
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume b', 'end b']);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume c', 'end c']);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume d', 'end d']);
    await turnEnd();
    expect(log).toEqual([]);
  });

  it('work put in line at a turn end waits for the next one, behind the rest, and is held once however often it asks', async () => {
    const { log, turns, work } = setUp(Infinity);
    const [a, b] = ['a', 'b'].map(work);
    a!.again = true;
    turns.inLaterTurn(a!);
    turns.inLaterTurn(b!);
    turns.inLaterTurn(a!);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'resume b', 'end a', 'end b']);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a']);
  });

  it('a long line grows and keeps its order', async () => {
    const { log, turns, work } = setUp(Infinity);
    const names = Array.from({ length: 100 }, (_, i) => `w${i}`);
    for (const w of names.map(work)) turns.inLaterTurn(w);
    await turnEnd();
    expect(log.filter((l) => l.startsWith('resume'))).toEqual(names.map((n) => `resume ${n}`));
  });
});
