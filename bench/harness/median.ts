// Medians for the benchmarks' interleaved rounds: the lower middle of an even count, so
// the reported figure is always one that was measured.

/** The item whose `value` is the median (the lower middle one of an even count); undefined when empty. */
export function medianBy<T>(items: readonly T[], value: (item: T) => number): T | undefined {
  const sorted = [...items].sort((a, b) => value(a) - value(b));
  return sorted[(sorted.length - 1) >> 1];
}

/** The median of the defined values, if any. */
export function median(values: readonly (number | undefined)[]): number | undefined {
  return medianBy(
    values.filter((v): v is number => v !== undefined),
    (v) => v,
  );
}

/** "median (min–max)" of the defined values, each with `digits` decimals; "–" when there are none. */
export function medianWithRange(values: readonly (number | undefined)[], digits = 0): string {
  const defined = values.filter((v): v is number => v !== undefined);
  if (defined.length === 0) return '–';
  return `${median(defined)!.toFixed(digits)} (${Math.min(...defined).toFixed(digits)}–${Math.max(...defined).toFixed(digits)})`;
}
