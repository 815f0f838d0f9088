import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { setMetricsLogger } from './db-gauge.ts';
import type { Logger } from './logger.ts';

export { Counter, Gauge, Histogram, Registry };

/**
 * One registry per app instance (tests build several apps in one process, so there is no global
 * registry). Metric helpers return the existing metric when a name is registered twice, so two
 * parts of the code can share a metric without passing objects around.
 */
export function createRegistry(log?: Logger): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (log) setMetricsLogger(registry, log);
  return registry;
}

type Cfg<T extends string> = { name: string; help: string; labelNames?: readonly T[] };

export function counter<T extends string>(registry: Registry, cfg: Cfg<T>): Counter<T> {
  return (registry.getSingleMetric(cfg.name) as Counter<T> | undefined) ?? new Counter({ ...cfg, registers: [registry] });
}

export function gauge<T extends string>(
  registry: Registry,
  cfg: Cfg<T> & { collect?: (this: Gauge<T>) => void | Promise<void> },
): Gauge<T> {
  return (registry.getSingleMetric(cfg.name) as Gauge<T> | undefined) ?? new Gauge({ ...cfg, registers: [registry] });
}

export function histogram<T extends string>(
  registry: Registry,
  cfg: Cfg<T> & { buckets?: number[] },
): Histogram<T> {
  return (
    (registry.getSingleMetric(cfg.name) as Histogram<T> | undefined) ?? new Histogram({ ...cfg, registers: [registry] })
  );
}
