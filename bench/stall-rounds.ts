// The summary of `growth-stall.ts --rounds N`: each target's figures for the measured phase
// over the rounds (median and range), then the same over the quiet rounds only. A worst
// round trip is one event in thousands, and on a shared VM the hypervisor's steal sets it
// as often as the server does: one run says little, and the rounds with little steal are
// where the servers can be told apart.
import { fmt, QUIET_STEAL_SHARE, quietStealBudgetMs, table } from './comparison-report.ts';
import { median } from './harness/median.ts';

/** One target's figures for one phase of one round. */
export interface StallPhase {
  readonly worstMs: number;
  readonly p999Ms: number;
  readonly over5Ms: number;
  /** The worst round trip sent a second or more into the phase: the worst without the phase's start. */
  readonly worstAfterFirstSecondMs?: number;
  /** The machine's steal over the phase, ms (undefined where /proc/stat has none). */
  readonly stealMs?: number;
  /** How long the phase ran. */
  readonly seconds: number;
  /** The same round trips less what the hypervisor took from the server's and the prober's threads (growth-stall --trace-steal). */
  readonly lessSteal?: { readonly worstMs: number; readonly p999Ms: number; readonly over5Ms: number };
}

/** Each round's phase, per target, in the order the rounds ran (a round runs every target once). */
export type StallRounds = ReadonlyMap<string, readonly StallPhase[]>;

/**
 * The rounds in which every target's phase had at most QUIET_STEAL_SHARE of the machine's
 * CPU time (`cpus` times the phase's seconds) stolen: indexes into each target's list. As in
 * `npm run bench`, the choice looks at steal only, never at a result.
 */
export function quietStallRounds(rounds: StallRounds, cpus: number): number[] {
  const lists = [...rounds.values()];
  const n = Math.min(...lists.map((l) => l.length));
  const quiet = (p: StallPhase | undefined) => p?.stealMs !== undefined && p.stealMs <= quietStealBudgetMs(cpus, p.seconds);
  return Array.from({ length: n }, (_, i) => i).filter((i) => lists.every((l) => quiet(l[i])));
}

const spread = (values: readonly number[], digits: number): string => {
  if (values.length === 0) return '—';
  const m = fmt(median(values), digits);
  return values.length === 1 ? m : `${m} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`;
};

/** The table of `growth-stall.ts --rounds`: medians with their ranges, all rounds and quiet ones. */
export function renderStallRounds(rounds: StallRounds, phase: string, cpus: number): string {
  const targets = [...rounds.keys()];
  const n = Math.min(...[...rounds.values()].map((l) => l.length));
  const quiet = quietStallRounds(rounds, cpus);
  const column = (pick: (p: StallPhase) => number | undefined, digits: number, only?: readonly number[]) =>
    targets.map((t) => {
      const list = rounds.get(t)!.slice(0, n);
      const chosen = only === undefined ? list : only.map((i) => list[i]!);
      return spread(
        chosen.map(pick).filter((v): v is number => v !== undefined),
        digits,
      );
    });
  const rows = [
    ['', ...targets],
    [`${phase}: worst round trip ms`, ...column((p) => p.worstMs, 2)],
    [`${phase}: worst after its first second ms`, ...column((p) => p.worstAfterFirstSecondMs, 2)],
    [`${phase}: p99.9 ms`, ...column((p) => p.p999Ms, 2)],
    [`${phase}: round trips over 5 ms`, ...column((p) => p.over5Ms, 0)],
    [`${phase}: machine steal ms`, ...column((p) => p.stealMs, 0)],
    [`${phase}: seconds`, ...column((p) => p.seconds, 1)],
    [`quiet rounds (${quiet.length} of ${n}): worst round trip ms`, ...column((p) => p.worstMs, 2, quiet)],
    [`quiet rounds: worst after the first second ms`, ...column((p) => p.worstAfterFirstSecondMs, 2, quiet)],
    [`quiet rounds: p99.9 ms`, ...column((p) => p.p999Ms, 2, quiet)],
    [`quiet rounds: round trips over 5 ms`, ...column((p) => p.over5Ms, 0, quiet)],
  ];
  const traced = [...rounds.values()].some((list) => list.some((p) => p.lessSteal !== undefined));
  if (traced) {
    rows.push(
      [`less steal: worst round trip ms`, ...column((p) => p.lessSteal?.worstMs, 2)],
      [`less steal: p99.9 ms`, ...column((p) => p.lessSteal?.p999Ms, 2)],
      [`less steal: round trips over 5 ms`, ...column((p) => p.lessSteal?.over5Ms, 0)],
    );
  }
  return [
    '',
    `${n} round${n === 1 ? '' : 's'}, each running ${targets.join(', ')} in turn; median (min–max) over the rounds.`,
    `quiet rounds: those in which no target's ${phase} phase had more steal than ${QUIET_STEAL_SHARE * 100}% of the machine's CPU time over it (${cpus} CPUs × its seconds).`,
    ...(traced ? [`less steal: every round, each round trip less the stretches the hypervisor stopped the server's or the prober's thread (--trace-steal).`] : []),
    '',
    table(rows),
  ].join('\n');
}
