// Log-linear buckets in the style of HdrHistogram: exact to the microsecond below
// 256 µs, then 128 sub-buckets per power of two (relative error under 0.8 %), up to
// 2^32 µs (71 minutes). Recording is an index computation and an add: cheap enough
// for the load generator's hot loop, and merging two histograms is adding arrays.

const EXACT = 256;
const SUB_BITS = 7;
const SUB = 1 << SUB_BITS; // 128
const MAX_US = 0xffff_ffff;
export const HISTOGRAM_BUCKETS = EXACT + (32 - 8) * SUB;

function bucketOf(us: number): number {
  if (us < EXACT) return us;
  const e = 31 - Math.clz32(us); // floor(log2(us)), 8..31
  const sub = us >>> (e - SUB_BITS); // 128..255
  return EXACT + (e - 8) * SUB + (sub - SUB);
}

/** The largest value that falls in bucket i (HdrHistogram's "highest equivalent value"). */
function bucketUpper(i: number): number {
  if (i < EXACT) return i;
  const e = 8 + Math.floor((i - EXACT) / SUB);
  const sub = SUB + ((i - EXACT) % SUB);
  return (sub + 1) * 2 ** (e - SUB_BITS) - 1;
}

export interface LatencySummary {
  /** Milliseconds. */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly mean: number;
  readonly count: number;
}

export interface HistogramData {
  readonly counts: Float64Array;
  readonly count: number;
  readonly sumUs: number;
  readonly maxUs: number;
}

export class LatencyHistogram {
  readonly counts: Float64Array;
  count = 0;
  sumUs = 0;
  maxUs = 0;

  constructor(counts?: Float64Array) {
    this.counts = counts ?? new Float64Array(HISTOGRAM_BUCKETS);
  }

  /** What a worker thread posts back (the counts array can be transferred). */
  toData(): HistogramData {
    return { counts: this.counts, count: this.count, sumUs: this.sumUs, maxUs: this.maxUs };
  }

  static fromData(data: HistogramData): LatencyHistogram {
    const h = new LatencyHistogram(data.counts);
    h.count = data.count;
    h.sumUs = data.sumUs;
    h.maxUs = data.maxUs;
    return h;
  }

  /** Records `n` requests that each took `ms` milliseconds. */
  recordMs(ms: number, n = 1): void {
    let us = Math.round(ms * 1000);
    if (us < 0) us = 0;
    else if (us > MAX_US) us = MAX_US;
    this.counts[bucketOf(us)]! += n;
    this.count += n;
    this.sumUs += us * n;
    if (us > this.maxUs) this.maxUs = us;
  }

  merge(other: LatencyHistogram): void {
    for (let i = 0; i < this.counts.length; i++) this.counts[i]! += other.counts[i]!;
    this.count += other.count;
    this.sumUs += other.sumUs;
    if (other.maxUs > this.maxUs) this.maxUs = other.maxUs;
  }

  /** The latency (µs) at or below which a fraction q of the requests completed. */
  quantileUs(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(bucketUpper(i), this.maxUs);
    }
    return this.maxUs;
  }

  summary(): LatencySummary {
    const ms = (us: number) => Math.round(us) / 1000;
    return {
      p50: ms(this.quantileUs(0.5)),
      p90: ms(this.quantileUs(0.9)),
      p99: ms(this.quantileUs(0.99)),
      p999: ms(this.quantileUs(0.999)),
      max: ms(this.maxUs),
      mean: this.count ? ms(this.sumUs / this.count) : 0,
      count: this.count,
    };
  }
}
