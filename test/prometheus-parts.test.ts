// services/shared/prometheus.ts takes prom-client's parts from their own files, to leave
// its Pushgateway client (https, TLS, zlib) unloaded: each must be the very class or
// function prom-client's index exports, and no service may import the index for a value.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as parts from '../services/shared/prometheus.ts';

const index = createRequire(import.meta.url)('prom-client') as Record<string, unknown>;
const services = fileURLToPath(new URL('../services/', import.meta.url));

describe("prom-client's parts", () => {
  it('are what the index exports', () => {
    for (const [name, part] of Object.entries(parts)) expect(part, name).toBe(index[name]);
    expect(Object.keys(parts).sort()).toEqual(['Counter', 'Gauge', 'Histogram', 'Registry', 'collectDefaultMetrics']);
  });

  it('are the only values the services take from prom-client', () => {
    const files = (readdirSync(services, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    const offenders = files.filter((f) => /^\s*import\s+(?!type\b)[^;]*?from\s+'prom-client'/m.test(readFileSync(join(services, f), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
