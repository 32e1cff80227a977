// A strict reader of the Prometheus text format (0.0.4), enough to check what /metrics
// serves: every line must be a comment or a well-formed sample, or parsing throws.

export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

export interface Exposition {
  readonly types: Map<string, string>;
  readonly help: Map<string, string>;
  readonly samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type!)) throw new Error(`bad TYPE line: ${line}`);
      types.set(name!, type!);
      continue;
    }
    if (line.startsWith('# HELP ')) {
      const rest = line.slice(7);
      help.set(rest.slice(0, rest.indexOf(' ')), rest.slice(rest.indexOf(' ') + 1));
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL.lastIndex = 0;
      let l: RegExpExecArray | null;
      while (LABEL.lastIndex < m[2].length && (l = LABEL.exec(m[2]))) labels[l[1]!] = l[2]!;
      if (LABEL.lastIndex !== m[2].length) throw new Error(`bad labels: ${line}`);
    }
    // Prometheus parses values with Go's ParseFloat: NaN and Inf in any case (prom-client writes `Nan`).
    const raw = m[3]!.toLowerCase();
    const value = raw === 'nan' ? NaN : raw === '+inf' || raw === 'inf' ? Infinity : raw === '-inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`bad value: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { types, help, samples };
}

/** The value of the one sample with this name and (a superset of) these labels. */
export function sampleValue(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples match ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/** A sample's series as exposed: `name{k="v",...}` (labels in exposition order), or `name`. */
export function seriesName(s: Sample): string {
  const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${v}"`);
  return labels.length === 0 ? s.name : `${s.name}{${labels.join(',')}}`;
}

/** Every series of an exposition and its value. */
export function seriesValues(text: string): Map<string, number> {
  return new Map(parseExposition(text).samples.map((s) => [seriesName(s), s.value]));
}

/** Sums every sample of a metric family (optionally only series whose label text contains `labelFilter`). */
export function metricSum(text: string, name: string, labelFilter = ''): number {
  let sum = 0;
  for (const s of parseExposition(text).samples) {
    if (s.name === name && seriesName(s).slice(name.length).includes(labelFilter)) sum += s.value;
  }
  return sum;
}

/** The series of every metric whose name starts with `prefix`. */
export function seriesOf(text: string, prefix: string): string[] {
  return parseExposition(text)
    .samples.filter((s) => s.name.startsWith(prefix))
    .map(seriesName);
}
