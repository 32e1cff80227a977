// The parts of prom-client the services use, each from its own file. prom-client's index
// also loads its Pushgateway client (https, and with it TLS and zlib) and its cluster
// aggregator, neither of which a service uses: ~30 ms of start-up and ~6 MiB of resident
// memory (docs/benchmarks.md#start-up). test/prometheus-parts.test.ts holds each part to
// the one the index exports, so a prom-client that moves a file fails there, not here.
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof PromClient.Registry;
export const Counter = require('prom-client/lib/counter') as typeof PromClient.Counter;
export const Gauge = require('prom-client/lib/gauge') as typeof PromClient.Gauge;
export const Histogram = require('prom-client/lib/histogram') as typeof PromClient.Histogram;
/** Each class as a type too, as the index exports them. */
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

export const collectDefaultMetrics = require('prom-client/lib/defaultMetrics') as typeof PromClient.collectDefaultMetrics;
