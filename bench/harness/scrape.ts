import { seriesValues } from './exposition.ts';

/** The text a service's /metrics serves. */
export async function scrapeText(metricsPort: number, host = '127.0.0.1'): Promise<string> {
  const res = await fetch(`http://${host}:${metricsPort}/metrics`);
  if (!res.ok) throw new Error(`GET /metrics on ${host}:${metricsPort} answered ${res.status}`);
  return res.text();
}

/** One scrape of a service's /metrics: every series and its value. */
export async function scrape(metricsPort: number, host = '127.0.0.1'): Promise<Map<string, number>> {
  return seriesValues(await scrapeText(metricsPort, host));
}
