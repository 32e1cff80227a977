import { describe, expect, it } from 'vitest';
import { quietStallRounds, renderStallRounds, type StallPhase } from '../bench/stall-rounds.ts';

// 20 s on 2 CPUs: a phase is quiet with at most 600 ms of steal (1.5% of 40 CPU-seconds).
const phase = (worstMs: number, stealMs: number | undefined, over5Ms = 0): StallPhase => ({ worstMs, p999Ms: worstMs / 2, over5Ms, stealMs, seconds: 20 });

describe('growth-stall rounds: medians and quiet rounds', () => {
  const rounds = new Map([
    ['kvstack', [phase(6, 100, 3), phase(30, 5000, 90), phase(4, 600, 1)]],
    ['redis', [phase(5, 200, 2), phase(9, 100, 10), phase(7, 300, 4)]],
  ]);

  it('a round is quiet only when every target had at most 1.5% of the machine’s time stolen', () => {
    expect(quietStallRounds(rounds, 2)).toEqual([0, 2]);
    // With one CPU the budget halves to 300 ms: round 3's 600 ms is too much.
    expect(quietStallRounds(rounds, 1)).toEqual([0]);
  });

  it('a round without a steal figure is never quiet', () => {
    expect(quietStallRounds(new Map([['kvstack', [phase(5, undefined), phase(5, 0)]]]), 2)).toEqual([1]);
  });

  it('prints each target’s median and range over all rounds and over the quiet ones', () => {
    const text = renderStallRounds(rounds, 'load', 2);
    expect(text).toMatch(/load: worst round trip ms +6\.00 \(4\.00–30\.00\) +7\.00 \(5\.00–9\.00\)/);
    expect(text).toMatch(/load: round trips over 5 ms +3 \(1–90\) +4 \(2–10\)/);
    // Rounds 1 and 3: the lower middle of two is the figure reported.
    expect(text).toMatch(/quiet rounds \(2 of 3\): worst round trip ms +4\.00 \(4\.00–6\.00\) +5\.00 \(5\.00–7\.00\)/);
  });

  it('prints the worst after the phase’s first second beside the worst, over all rounds and the quiet ones', () => {
    const withStart = (worstMs: number, after: number, stealMs: number): StallPhase => ({ ...phase(worstMs, stealMs), worstAfterFirstSecondMs: after });
    const text = renderStallRounds(new Map([['kvstack', [withStart(8, 4, 100), withStart(9, 6, 5000), withStart(7, 3, 100)]]]), 'load', 2);
    expect(text).toMatch(/load: worst after its first second ms +4\.00 \(3\.00–6\.00\)/);
    expect(text).toMatch(/quiet rounds: worst after the first second ms +3\.00 \(3\.00–4\.00\)/);
  });

  it('says so when no round was quiet', () => {
    const noisy = new Map([['kvstack', [phase(20, 9000)]]]);
    expect(renderStallRounds(noisy, 'sweep', 2)).toMatch(/quiet rounds \(0 of 1\): worst round trip ms +—/);
  });
});

describe('growth-stall rounds: round trips less steal', () => {
  it('adds the figures less steal when a round has them, and leaves them out otherwise', () => {
    const traced = (worstMs: number, lessWorst: number): StallPhase => ({ ...phase(worstMs, 100), lessSteal: { worstMs: lessWorst, p999Ms: lessWorst / 2, over5Ms: 1 } });
    const text = renderStallRounds(new Map([['kvstack', [traced(20, 4), traced(30, 6), traced(10, 3)]]]), 'load', 2);
    expect(text).toMatch(/less steal: worst round trip ms +4\.00 \(3\.00–6\.00\)/);
    expect(text).toMatch(/less steal: round trips over 5 ms +1 \(1–1\)/);
    expect(renderStallRounds(new Map([['kvstack', [phase(20, 100)]]]), 'load', 2)).not.toMatch(/less steal/);
  });
});
