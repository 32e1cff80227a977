import type { Metric, Registry } from 'prom-client';

// The one adapter between the services' hot-path counts (plain numbers and typed arrays,
// a few additions per event) and prom-client: a metric whose samples are computed at
// scrape time, in the shape prom-client's Registry renders (the `get()` every metric
// has). prom-client's own labelled inc()/observe() hash a label object per call, which
// costs about a microsecond: too much per store command or per HTTP request.

export interface MetricSample {
  readonly value: number;
  readonly labels: Readonly<Record<string, string | number>>;
  /** For a histogram's series: `<name>_bucket`, `_sum` or `_count`. */
  readonly metricName?: string;
}

export interface ScrapeTimeMetricOptions {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly registry: Registry;
  /** The samples, read at scrape time. */
  readonly samples: () => MetricSample[];
  /** Zeroes the counts behind the samples (registry.resetMetrics()). */
  readonly reset: () => void;
}

export class ScrapeTimeMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly aggregator = 'sum' as const;
  readonly #samples: () => MetricSample[];
  readonly #reset: () => void;

  constructor({ name, help, type, registry, samples, reset }: ScrapeTimeMetricOptions) {
    this.name = name;
    this.help = help;
    this.type = type;
    this.#samples = samples;
    this.#reset = reset;
    // The registry accepts any object with the Metric surface it uses (name, get, reset).
    registry.registerMetric(this as unknown as Metric);
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricSample[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.#samples() };
  }

  reset(): void {
    this.#reset();
  }
}

/**
 * Appends one label set's histogram series to `out`: cumulative buckets for `bounds`
 * (`counts(i)` is bucket i's own count, not cumulative; i === bounds.length is above the
 * last bound), then +Inf, `_sum` and `_count`.
 */
export function pushHistogramSamples(
  out: MetricSample[],
  name: string,
  labels: Readonly<Record<string, string>>,
  bounds: readonly number[],
  counts: (i: number) => number,
  sum: number,
): void {
  let cumulative = 0;
  for (let i = 0; i < bounds.length; i++) {
    cumulative += counts(i);
    out.push({ value: cumulative, labels: { ...labels, le: bounds[i]! }, metricName: `${name}_bucket` });
  }
  cumulative += counts(bounds.length);
  out.push({ value: cumulative, labels: { ...labels, le: '+Inf' }, metricName: `${name}_bucket` });
  out.push({ value: sum, labels, metricName: `${name}_sum` });
  out.push({ value: cumulative, labels, metricName: `${name}_count` });
}
