// The store's turn scheduler with stand-in connections: what a turn end runs, in what
// order, and how the turn's time for pipelined work puts connections in line.
import { describe, expect, it } from 'vitest';
import { TurnScheduler, type TurnWork } from '../services/store/network/turn-scheduler.ts';

const turnEnd = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A connection that logs what the scheduler asks of it and, like ServedConnection, asks for its turn end after running. */
class StandIn implements TurnWork {
  turnQueues = 0;
  /** Set to make its next endTurn put it in line again (lines left after its slice). */
  again = false;
  /** How long (ms of the clock) its endTurn takes, as a large write would. */
  endTakesMs = 0;

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
    const until = performance.now() + this.endTakesMs;
    while (performance.now() < until); // busy, as a write(2) is
    if (this.again) {
      this.again = false;
      this.turns().waitInLine(this);
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

/** A scheduler with the given budget; `left` gets what each turn end left waiting (leftWaiting). */
function setUp(budgetMs: number, log: string[] = [], left: number[] = []) {
  const turns = new TurnScheduler({ before: () => performance.now(), after: () => {} }, budgetMs, (n) => left.push(n));
  const work = (name: string) => new StandIn(name, () => turns, log);
  return { log, left, turns, work };
}

describe('TurnScheduler', () => {
  it('work put in line before a turn end runs at it; what the turn’s budget does not reach waits for the next, and is counted', async () => {
    const { log, left, turns, work } = setUp(0);
    const [a, b, c] = ['a', 'b', 'c'].map(work);
    turns.waitInLine(a!);
    turns.waitInLine(b!);
    turns.waitInLine(c!);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a']);
    expect(left).toEqual([2]);
    await turnEnd();
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume b', 'end b', 'resume c', 'end c']);
    expect(left).toEqual([2, 1]);
    // A budget no stall of the machine uses up: the whole line runs, nothing is counted.
    const roomy = setUp(60_000, log, left);
    for (const w of ['d', 'e'].map(roomy.work)) roomy.turns.waitInLine(w);
    await turnEnd();
    expect(log).toEqual(['resume d', 'end d', 'resume e', 'end e']);
    expect(left).toEqual([2, 1]);
  });

  it('a turn end runs the held reads and writes every reply of the turn before the work in line runs, which writes each one’s as soon as it has run', async () => {
    const { log, turns, work } = setUp(Infinity);
    const [a, b, h, r] = ['a', 'b', 'h', 'r'].map(work);
    turns.waitInLine(a!);
    turns.waitInLine(b!);
    turns.atEndOfTurn(r!); // ran in the poll phase
    turns.runHeldAtEndOfTurn(h!);
    await turnEnd();
    expect(log).toEqual(['held h', 'end r', 'end h', 'resume a', 'end a', 'resume b', 'end b']);
  });

  it('the budget counts the writes of the work in line: one whose replies take long to write leaves the next waiting', async () => {
    const { log, left, turns, work } = setUp(3);
    const [a, b] = ['a', 'b'].map(work);
    a!.endTakesMs = 5; // its resume is quick: only its write uses up the budget
    turns.waitInLine(a!);
    turns.waitInLine(b!);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a']);
    expect(left).toEqual([1]);
    await turnEnd();
    expect(log).toEqual(['resume b', 'end b']);
  });

  it('work in line runs from the head: the first whatever the budget, the others while it lasts; the rest keep their places', async () => {
    const { log, turns, work } = setUp(0);
    for (const w of ['a', 'b', 'c'].map(work)) turns.waitInLine(w);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a']);
    turns.waitInLine(work('d')); // behind those already in line
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
    turns.waitInLine(a!);
    turns.waitInLine(b!);
    turns.waitInLine(a!);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a', 'resume b', 'end b']);
    await turnEnd();
    expect(log.splice(0)).toEqual(['resume a', 'end a']);
  });

  it('a long line grows and keeps its order', async () => {
    const { log, turns, work } = setUp(Infinity);
    const names = Array.from({ length: 100 }, (_, i) => `w${i}`);
    for (const w of names.map(work)) turns.waitInLine(w);
    await turnEnd();
    expect(log.filter((l) => l.startsWith('resume'))).toEqual(names.map((n) => `resume ${n}`));
  });
});
