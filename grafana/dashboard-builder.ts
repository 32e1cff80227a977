// kvstack's dashboard conventions on Grafana's foundation SDK (@grafana/grafana-foundation-sdk,
// its 11.6 line: the schema of the Grafana image docker-compose.yml runs). A dashboard file is
// a list of rows of panels; each helper here returns the SDK's own panel builder with the
// house defaults set (palette or threshold colors, alert thresholds as dashed lines, every
// query on the dashboard's datasource variable), so a panel needing more chains the SDK's
// methods onto it, and any other SDK panel builder can sit in a row too. dashboard() lays
// the rows out on Grafana's 24-column grid and numbers the panels.
import type * as cog from '@grafana/grafana-foundation-sdk/cog';
import {
  BigValueColorMode,
  BigValueGraphMode,
  BigValueJustifyMode,
  BigValueTextMode,
  GraphDrawStyle,
  GraphThresholdsStyleConfigBuilder,
  LegendDisplayMode,
  LegendPlacement,
  ReduceDataOptionsBuilder,
  SortOrder,
  StackingConfigBuilder,
  StackingMode,
  TooltipDisplayMode,
  VisibilityMode,
  VizLegendOptionsBuilder,
  VizOrientation,
  VizTooltipOptionsBuilder,
  GraphThresholdsStyleMode,
} from '@grafana/grafana-foundation-sdk/common';
import {
  DashboardBuilder,
  DashboardCursorSync,
  DashboardLinkBuilder,
  DashboardLinkType,
  DatasourceVariableBuilder,
  FieldColorBuilder,
  FieldColorModeId,
  MappingType,
  QueryVariableBuilder,
  RowBuilder,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  VariableHide,
  VariableRefresh,
  VariableSort,
  type Dashboard,
  type DataSourceRef,
  type Panel,
  type ValueMapping as GrafanaValueMapping,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { PanelBuilder as GaugePanelBuilder } from '@grafana/grafana-foundation-sdk/gauge';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import type * as units from '@grafana/grafana-foundation-sdk/units';

export type { Dashboard, Panel };

/** The dashboard's datasource variable: a Prometheus datasource picked in Grafana. */
export const DATASOURCE_VARIABLE = 'datasource';

/** Where every panel, query and variable reads from: the datasource the variable holds. */
export const DATASOURCE: Readonly<DataSourceRef> = Object.freeze({ type: 'prometheus', uid: `\${${DATASOURCE_VARIABLE}}` });

/** Grafana's unit ids, as the SDK lists them (ops/s, requests/s, seconds, IEC bytes, …), or a custom suffix. */
// (The namespace of a CommonJS module also holds itself as `default`.)
export type Unit = (typeof units)[Exclude<keyof typeof units, 'default'>] | `suffix:${string}`;
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

/** A query variable filled from label values, multi-select with "All". */
export interface VariableSpec {
  readonly name: string;
  readonly label: string;
  /** `label_values(<selector>, <label>)`. */
  readonly query: string;
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly cog.Builder<Panel>[];
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

export const row = (title: string, panels: readonly cog.Builder<Panel>[]): RowSpec => ({ title, panels });

export const variable = (name: string, label: string, query: string): VariableSpec => ({ name, label, query });

const thresholdsConfig = (t: Thresholds | undefined): ThresholdsConfigBuilder =>
  new ThresholdsConfigBuilder()
    .mode(ThresholdsMode.Absolute)
    .steps([{ color: t?.base ?? 'green', value: null }, ...(t?.steps ?? []).map((s) => ({ color: s.color, value: s.value }))]);

function valueMappings(mappings: readonly ValueMapping[] | undefined): GrafanaValueMapping[] {
  if (!mappings?.length) return [];
  const options = Object.fromEntries(mappings.map((m, index) => [String(m.value), { text: m.text, color: m.color, index }]));
  return [{ type: MappingType.ValueToText, options }];
}

const target = (q: Query, i: number): DataqueryBuilder =>
  new DataqueryBuilder()
    .refId(String.fromCharCode(65 + i))
    .datasource(DATASOURCE)
    .expr(q.expr)
    .legendFormat(q.legend)
    .range();

// The options every panel kind takes alike; the three SDK builders share these methods.
function withFieldOptions<B extends TimeseriesPanelBuilder | StatPanelBuilder | GaugePanelBuilder>(b: B, o: PanelOptions, width: number, height: number): B {
  b.title(o.title)
    .description(o.description)
    .datasource(DATASOURCE)
    .targets(o.queries.map(target))
    .unit(o.unit)
    .thresholds(thresholdsConfig(o.thresholds))
    .mappings(valueMappings(o.mappings))
    .span(width)
    .height(height);
  if (o.min !== undefined) b.min(o.min);
  if (o.max !== undefined) b.max(o.max);
  if (o.decimals !== undefined) b.decimals(o.decimals);
  return b;
}

/** A graph: series colored from the palette, the thresholds drawn as dashed lines. */
export function timeseries(o: TimeseriesOptions): TimeseriesPanelBuilder {
  return withFieldOptions(new TimeseriesPanelBuilder(), o, o.width ?? 12, o.height ?? 8)
    .colorScheme(new FieldColorBuilder().mode(FieldColorModeId.PaletteClassic))
    .drawStyle(GraphDrawStyle.Line)
    .lineWidth(1)
    .fillOpacity(o.stack ? 30 : 10)
    .showPoints(VisibilityMode.Never)
    .spanNulls(false)
    .stacking(new StackingConfigBuilder().mode(o.stack ? StackingMode.Normal : StackingMode.None).group('A'))
    .thresholdsStyle(new GraphThresholdsStyleConfigBuilder().mode(o.thresholds ? GraphThresholdsStyleMode.Dashed : GraphThresholdsStyleMode.Off))
    .legend(new VizLegendOptionsBuilder().displayMode(LegendDisplayMode.List).placement(LegendPlacement.Bottom).showLegend(true).calcs([]))
    .tooltip(new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Multi).sort(SortOrder.Descending));
}

const lastValue = (): ReduceDataOptionsBuilder => new ReduceDataOptionsBuilder().calcs(['lastNotNull']).fields('').values(false);

/** One big number, its background colored by threshold. */
export function stat(o: StatOptions): StatPanelBuilder {
  return withFieldOptions(new StatPanelBuilder(), o, o.width ?? 4, o.height ?? 4)
    .colorScheme(new FieldColorBuilder().mode(FieldColorModeId.Thresholds))
    .reduceOptions(lastValue())
    .colorMode(BigValueColorMode.Background)
    .graphMode(BigValueGraphMode.Area)
    .justifyMode(BigValueJustifyMode.Auto)
    .orientation(VizOrientation.Auto)
    .textMode(BigValueTextMode.Auto);
}

/** A dial between min and max, its thresholds marked on the rim. */
export function gauge(o: GaugeOptions): GaugePanelBuilder {
  return withFieldOptions(new GaugePanelBuilder(), o, o.width ?? 4, o.height ?? 4)
    .colorScheme(new FieldColorBuilder().mode(FieldColorModeId.Thresholds))
    .reduceOptions(lastValue())
    .orientation(VizOrientation.Auto)
    .showThresholdLabels(false)
    .showThresholdMarkers(true);
}

/**
 * The Prometheus datasource picker. It starts on "default", the Grafana's default
 * datasource: with no value saved, Grafana takes the first Prometheus datasource by
 * name, which in a Grafana with several need not be the one meant.
 */
export const datasourceVariable = (): DatasourceVariableBuilder =>
  new DatasourceVariableBuilder(DATASOURCE_VARIABLE)
    .label('Data source')
    .type('prometheus')
    .current({ text: 'default', value: 'default' })
    .hide(VariableHide.DontHide);

const queryVariable = (v: VariableSpec): QueryVariableBuilder =>
  new QueryVariableBuilder(v.name)
    .label(v.label)
    .datasource(DATASOURCE)
    .query(v.query)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .includeAll(true)
    .multi(true)
    .sort(VariableSort.AlphabeticalAsc)
    .hide(VariableHide.DontHide);

/** A built panel handed back to the SDK's dashboard builder (which takes builders). */
const built = <T>(value: T): cog.Builder<T> => ({ build: () => value });

/**
 * Builds the dashboard: the datasource variable first, then the query variables; rows become Grafana row panels
 * and their panels flow left to right, wrapping to a new line when the next does not fit.
 */
export function dashboard(o: DashboardOptions): Dashboard {
  const b = new DashboardBuilder(o.title)
    .uid(o.uid)
    .description(o.description)
    .tags([...o.tags])
    .timezone('browser')
    .editable()
    .tooltip(DashboardCursorSync.Crosshair)
    .time({ from: 'now-1h', to: 'now' })
    .refresh('10s')
    .version(1)
    // An empty list rather than the SDK's bare {}: Grafana adds its built-in annotation to the list.
    .annotations([])
    .withVariable(datasourceVariable());
  for (const v of o.variables) b.withVariable(queryVariable(v));
  for (const l of o.links ?? []) {
    b.link(new DashboardLinkBuilder(l.title).type(DashboardLinkType.Link).url(l.url).icon('doc').targetBlank(true).asDropdown(false).includeVars(false).keepTime(false).tags([]).tooltip(''));
  }
  // Positions are set here, whole: the SDK's own layout places a panel only when it has
  // none and lets one run past column 24 instead of wrapping it.
  let id = 1;
  let y = 0;
  for (const r of o.rows) {
    b.withRow(new RowBuilder(r.title).id(id++).collapsed(false).gridPos({ h: 1, w: 24, x: 0, y }));
    y += 1;
    let x = 0;
    let lineHeight = 0;
    for (const p of r.panels) {
      const panel = p.build();
      const w = panel.gridPos?.w ?? 12;
      const h = panel.gridPos?.h ?? 8;
      if (x + w > 24) {
        y += lineHeight;
        x = 0;
        lineHeight = 0;
      }
      panel.id = id++;
      panel.gridPos = { h, w, x, y };
      b.withPanel(built(panel));
      x += w;
      lineHeight = Math.max(lineHeight, h);
    }
    y += lineHeight;
  }
  return b.build();
}
