// grafana/dashboard-builder.ts: the house conventions on Grafana's SDK. Panels flow and wrap
// on the 24-column grid (the SDK's own layout lets one run past column 24), any SDK panel
// builder can sit in a row, and every query reads from the datasource variable.
import { PanelBuilder as TextPanelBuilder } from '@grafana/grafana-foundation-sdk/text';
import { describe, expect, it } from 'vitest';
import { DATASOURCE, dashboard, query, row, stat, timeseries, variable, type Panel } from '../grafana/dashboard-builder.ts';
import { lintDashboard } from '../grafana/dashboard-lint.ts';

const ts = (title: string, width: number, extra: Partial<Parameters<typeof timeseries>[0]> = {}) =>
  timeseries({ title, description: `${title}.`, unit: 'ops', width, queries: [query('sum(rate(x_total[$__rate_interval]))', 'x')], ...extra });

const built = dashboard({
  uid: 'test',
  title: 'test',
  description: 'A dashboard for the builder test.',
  tags: [],
  variables: [variable('job', 'job', 'label_values(x_total, job)')],
  rows: [
    row('First', [ts('a', 8), ts('b', 8), ts('c', 12, { height: 6 }), stat({ title: 'd', description: 'd.', unit: 'short', queries: [query('x_total', 'x'), query('y_total', 'y')] })]),
    row('Second', [new TextPanelBuilder().title('notes').span(24).height(3), ts('e', 12, { thresholds: { steps: [{ value: 5, color: 'red' }] } })]),
  ],
});
const panels = built.panels as Panel[];
const byTitle = (t: string): Panel => panels.find((p) => p.title === t)!;

describe('dashboard()', () => {
  it('lays panels out left to right, wrapping one that does not fit, rows below what came before', () => {
    expect(panels.map((p) => [p.title, p.gridPos])).toEqual([
      ['First', { h: 1, w: 24, x: 0, y: 0 }],
      ['a', { h: 8, w: 8, x: 0, y: 1 }],
      ['b', { h: 8, w: 8, x: 8, y: 1 }],
      ['c', { h: 6, w: 12, x: 0, y: 9 }],
      ['d', { h: 4, w: 4, x: 12, y: 9 }],
      ['Second', { h: 1, w: 24, x: 0, y: 15 }],
      ['notes', { h: 3, w: 24, x: 0, y: 16 }],
      ['e', { h: 8, w: 12, x: 0, y: 19 }],
    ]);
  });

  it('numbers every panel and row from 1', () => {
    expect(panels.map((p) => p.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('puts the datasource variable first and every query, panel and variable on it', () => {
    expect(built.templating.list!.map((v) => [v.type, v.name])).toEqual([
      ['datasource', 'datasource'],
      ['query', 'job'],
    ]);
    expect(built.templating.list![1]!.datasource).toEqual(DATASOURCE);
    const d = byTitle('d');
    expect(d.datasource).toEqual(DATASOURCE);
    expect(d.targets).toEqual([
      expect.objectContaining({ refId: 'A', datasource: DATASOURCE, expr: 'x_total', legendFormat: 'x' }),
      expect.objectContaining({ refId: 'B', datasource: DATASOURCE, expr: 'y_total', legendFormat: 'y' }),
    ]);
  });

  it('draws thresholds as dashed lines only on graphs that have them', () => {
    expect(byTitle('e').fieldConfig!.defaults.custom.thresholdsStyle).toEqual({ mode: 'dashed' });
    expect(byTitle('e').fieldConfig!.defaults.thresholds!.steps).toEqual([
      { color: 'green', value: null },
      { color: 'red', value: 5 },
    ]);
    expect(byTitle('a').fieldConfig!.defaults.custom.thresholdsStyle).toEqual({ mode: 'off' });
  });

  it('lets the lint see a foreign SDK panel that lacks what the house panels always have', () => {
    expect(lintDashboard(built).map((p) => `${p.rule} ${p.where}`)).toEqual(['unit panel "notes"', 'description panel "notes"']);
  });
});
