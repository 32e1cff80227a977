// services/shared/prometheus.ts takes prom-client's parts from their own files, to leave
// its Pushgateway client (https, TLS, zlib) unloaded: each must be the very class or
// function prom-client's index exports, and no service may import the index for a value.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import * as parts from '../services/shared/prometheus.ts';
import { serviceSources } from './helpers/service-sources.ts';

const index = createRequire(import.meta.url)('prom-client') as Record<string, unknown>;

describe("prom-client's parts", () => {
  it('are what the index exports', () => {
    for (const [name, part] of Object.entries(parts)) expect(part, name).toBe(index[name]);
    expect(Object.keys(parts).sort()).toEqual(['Counter', 'Gauge', 'Histogram', 'Registry', 'collectDefaultMetrics']);
  });

  it('are the only values the services take from prom-client', () => {
    const offenders = serviceSources()
      .filter((s) => /^\s*import\s+(?!type\b)[^;]*?from\s+'prom-client'/m.test(s.text))
      .map((s) => s.file);
    expect(offenders).toEqual([]);
  });
});
