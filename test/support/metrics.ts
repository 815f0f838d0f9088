import type { Registry } from '../../src/platform/observability/index.ts';

/**
 * The sum of a metric's samples whose labels include `labels`; `series` picks one series of a
 * histogram (`<name>_count`, `<name>_sum`). Fails — instead of reading 0 — when the registry has no
 * such metric, the metric has no such series, or a label name is not one of the metric's, so a
 * misspelled name cannot pass a test. A label set the metric has not seen yet reads 0.
 */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}, series = name): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric named '${name}' in the registry`);
  const { values } = await metric.get();
  const known = new Set((metric as unknown as { labelNames?: string[] }).labelNames ?? []);
  for (const label of Object.keys(labels)) {
    if (!known.has(label)) throw new Error(`metric '${name}' has no label '${label}' (labels: ${[...known].join(', ') || 'none'})`);
  }
  const seriesOf = (v: object) => (v as { metricName?: string }).metricName ?? name;
  const kind = (metric as unknown as { type?: string }).type;
  const histogramSeries = ['_count', '_sum', '_bucket'].map((suffix) => `${name}${suffix}`);
  if (kind === 'histogram' ? !histogramSeries.includes(series) : series !== name) {
    throw new Error(`metric '${name}' has no series '${series}'${kind === 'histogram' ? ` (a histogram: pick ${histogramSeries.join(', ')})` : ''}`);
  }
  return values
    .filter((v) => seriesOf(v) === series)
    .filter((v) => Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want))
    .reduce((sum, v) => sum + v.value, 0);
}
