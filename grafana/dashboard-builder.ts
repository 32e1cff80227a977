// Small typed builders for Grafana dashboard JSON (schema of Grafana 11). A dashboard is
// written as rows of panels; the builder numbers the panels, lays them out on Grafana's
// 24-column grid and fills in the defaults, so the dashboard files read as a list of
// queries with their units and alert thresholds.

/** The provisioned Prometheus datasource (grafana/provisioning/datasources). */
export const PROMETHEUS = Object.freeze({ type: 'prometheus', uid: 'kvstack-prometheus' });

/** Grafana unit ids used here (Grafana's names: ops/s, requests/s, seconds, IEC bytes, …). */
export type Unit = 'ops' | 'reqps' | 'cps' | 'percentunit' | 's' | 'bytes' | 'Bps' | 'short' | 'none' | `suffix:${string}`;
export type Color = 'green' | 'yellow' | 'orange' | 'red' | 'blue' | 'purple' | 'text';

export interface Query {
  readonly expr: string;
  /** Legend template, e.g. `{{instance}}`. */
  readonly legend: string;
}

/** A PromQL query with its legend. */
export const query = (expr: string, legend: string): Query => ({ expr, legend });

export interface ThresholdStep {
  readonly value: number;
  readonly color: Color;
}

export interface Thresholds {
  /** Color below the first step (green unless said otherwise). */
  readonly base?: Color;
  /** Ascending values, usually the alert thresholds of the panel's metric. */
  readonly steps: readonly ThresholdStep[];
}

export interface ValueMapping {
  readonly value: number;
  readonly text: string;
  readonly color: Color;
}

interface PanelOptions {
  readonly title: string;
  readonly description: string;
  readonly unit: Unit;
  readonly queries: readonly Query[];
  readonly thresholds?: Thresholds;
  readonly min?: number;
  readonly max?: number;
  readonly decimals?: number;
  readonly mappings?: readonly ValueMapping[];
  /** Grid columns out of 24. */
  readonly width?: number;
  readonly height?: number;
}

export interface TimeseriesOptions extends PanelOptions {
  readonly stack?: boolean;
}

export type StatOptions = PanelOptions;
export type GaugeOptions = PanelOptions;

export interface PanelSpec {
  readonly kind: 'timeseries' | 'stat' | 'gauge';
  readonly options: TimeseriesOptions;
  readonly width: number;
  readonly height: number;
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

/** A query variable filled from label values, multi-select with "All". */
export interface VariableSpec {
  readonly name: string;
  readonly label: string;
  /** `label_values(<selector>, <label>)`. */
  readonly query: string;
}

export interface DashboardOptions {
  readonly uid: string;
  readonly title: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly variables: readonly VariableSpec[];
  readonly rows: readonly RowSpec[];
  readonly links?: readonly { readonly title: string; readonly url: string }[];
}

export const timeseries = (options: TimeseriesOptions): PanelSpec => ({
  kind: 'timeseries',
  options,
  width: options.width ?? 12,
  height: options.height ?? 8,
});

export const stat = (options: StatOptions): PanelSpec => ({ kind: 'stat', options, width: options.width ?? 4, height: options.height ?? 4 });

export const gauge = (options: GaugeOptions): PanelSpec => ({ kind: 'gauge', options, width: options.width ?? 4, height: options.height ?? 4 });

export const row = (title: string, panels: readonly PanelSpec[]): RowSpec => ({ title, panels });

export const variable = (name: string, label: string, query: string): VariableSpec => ({ name, label, query });

// ---------------------------------------------------------------------------------------
// JSON model (the parts of Grafana's dashboard schema these builders emit).

export interface GridPos {
  h: number;
  w: number;
  x: number;
  y: number;
}

export interface PanelJson {
  id: number;
  type: string;
  title: string;
  description?: string;
  gridPos: GridPos;
  datasource?: typeof PROMETHEUS;
  targets?: { refId: string; datasource: typeof PROMETHEUS; expr: string; legendFormat: string; range: boolean; instant: boolean }[];
  fieldConfig?: { defaults: Record<string, unknown>; overrides: unknown[] };
  options?: Record<string, unknown>;
  collapsed?: boolean;
  panels?: PanelJson[];
}

export interface DashboardJson {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  panels: PanelJson[];
  templating: { list: Record<string, unknown>[] };
  [key: string]: unknown;
}

function thresholdsJson(t: Thresholds | undefined) {
  return {
    mode: 'absolute',
    steps: [{ color: t?.base ?? 'green', value: null }, ...(t?.steps ?? []).map((s) => ({ color: s.color, value: s.value }))],
  };
}

function mappingsJson(mappings: readonly ValueMapping[] | undefined) {
  if (!mappings?.length) return [];
  const options: Record<string, { text: string; color: string; index: number }> = {};
  mappings.forEach((m, index) => (options[String(m.value)] = { text: m.text, color: m.color, index }));
  return [{ type: 'value', options }];
}

// Graphs color series from the palette; stats and gauges color by threshold.
function fieldDefaults(o: PanelOptions, custom?: Record<string, unknown>): Record<string, unknown> {
  const d: Record<string, unknown> = {
    unit: o.unit,
    color: { mode: custom ? 'palette-classic' : 'thresholds' },
    thresholds: thresholdsJson(o.thresholds),
    mappings: mappingsJson(o.mappings),
  };
  if (o.min !== undefined) d.min = o.min;
  if (o.max !== undefined) d.max = o.max;
  if (o.decimals !== undefined) d.decimals = o.decimals;
  if (custom) d.custom = custom;
  return d;
}

function targetsJson(queries: readonly Query[], instant: boolean) {
  return queries.map((q, i) => ({
    refId: String.fromCharCode(65 + i),
    datasource: PROMETHEUS,
    expr: q.expr,
    legendFormat: q.legend,
    range: !instant,
    instant,
  }));
}

function panelJson(spec: PanelSpec, id: number, gridPos: GridPos): PanelJson {
  const o = spec.options;
  const base = { id, type: spec.kind, title: o.title, description: o.description, gridPos, datasource: PROMETHEUS };
  if (spec.kind === 'timeseries') {
    const custom = {
      drawStyle: 'line',
      lineWidth: 1,
      fillOpacity: o.stack ? 30 : 10,
      showPoints: 'never',
      spanNulls: false,
      stacking: { mode: o.stack ? 'normal' : 'none', group: 'A' },
      // Alert thresholds are drawn as dashed lines on the graph.
      thresholdsStyle: { mode: o.thresholds ? 'dashed' : 'off' },
    };
    const defaults = fieldDefaults(o, custom);
    return {
      ...base,
      targets: targetsJson(o.queries, false),
      fieldConfig: { defaults, overrides: [] },
      options: {
        legend: { displayMode: 'list', placement: 'bottom', showLegend: true, calcs: [] },
        tooltip: { mode: 'multi', sort: 'desc' },
      },
    };
  }
  const reduceOptions = { calcs: ['lastNotNull'], fields: '', values: false };
  const defaults = fieldDefaults(o);
  if (spec.kind === 'stat') {
    return {
      ...base,
      targets: targetsJson(o.queries, false),
      fieldConfig: { defaults, overrides: [] },
      options: { reduceOptions, colorMode: 'background', graphMode: 'area', justifyMode: 'auto', orientation: 'auto', textMode: 'auto' },
    };
  }
  return {
    ...base,
    targets: targetsJson(o.queries, false),
    fieldConfig: { defaults, overrides: [] },
    options: { reduceOptions, orientation: 'auto', showThresholdLabels: false, showThresholdMarkers: true },
  };
}

function variableJson(v: VariableSpec): Record<string, unknown> {
  return {
    name: v.name,
    label: v.label,
    type: 'query',
    datasource: PROMETHEUS,
    definition: v.query,
    query: { query: v.query, refId: `${v.name}-variable` },
    refresh: 2, // on time range change
    includeAll: true,
    multi: true,
    current: {},
    options: [],
    sort: 1,
    hide: 0,
  };
}

/** Builds the dashboard JSON: rows become Grafana row panels, panels flow left to right. */
export function dashboard(o: DashboardOptions): DashboardJson {
  const panels: PanelJson[] = [];
  let id = 1;
  let y = 0;
  for (const r of o.rows) {
    panels.push({ id: id++, type: 'row', title: r.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    let x = 0;
    let lineHeight = 0;
    for (const p of r.panels) {
      if (x + p.width > 24) {
        y += lineHeight;
        x = 0;
        lineHeight = 0;
      }
      panels.push(panelJson(p, id++, { h: p.height, w: p.width, x, y }));
      x += p.width;
      lineHeight = Math.max(lineHeight, p.height);
    }
    y += lineHeight;
  }
  return {
    uid: o.uid,
    title: o.title,
    description: o.description,
    tags: [...o.tags],
    timezone: 'browser',
    editable: true,
    graphTooltip: 1, // shared crosshair
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-1h', to: 'now' },
    refresh: '10s',
    fiscalYearStartMonth: 0,
    liveNow: false,
    weekStart: '',
    links: (o.links ?? []).map((l) => ({ title: l.title, url: l.url, type: 'link', icon: 'doc', targetBlank: true, asDropdown: false, includeVars: false, keepTime: false, tags: [], tooltip: '' })),
    annotations: { list: [] },
    templating: { list: o.variables.map(variableJson) },
    panels,
  };
}
