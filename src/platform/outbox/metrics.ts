import type { Db } from '../db/index.ts';
import { dbGauge } from '../observability/db-gauge.ts';
import { counter, histogram, type Registry } from '../observability/metrics.ts';
import { pendingStats } from './sql.ts';

/**
 * Outbox metrics. The two gauges are read from the database at scrape time (one cheap query over
 * the pending partial index, shared by both gauges), so they show a stuck publisher too — the
 * alert on `outbox_oldest_pending_age_seconds` must not depend on the publisher still running.
 */
export function outboxMetrics(registry: Registry, db: Db) {
  // Both gauges are collected side by side in a scrape: they join the query in flight, and the next
  // scrape reads afresh. Database down: the query rejects and dbGauge keeps the last values.
  let sample: Promise<{ pending: number; oldestAgeSeconds: number }> | undefined;
  const read = () =>
    (sample ??= pendingStats(db).finally(() => {
      sample = undefined;
    }));
  dbGauge(registry, {
    name: 'outbox_pending',
    help: 'Outbox rows not yet published (counted up to 1,000,000 per scrape)',
    read: async () => (await read()).pending,
  });
  dbGauge(registry, {
    name: 'outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest unpublished outbox row (0 when none); alert when it keeps growing',
    read: async () => (await read()).oldestAgeSeconds,
  });
  return {
    published: counter(registry, {
      name: 'outbox_published_total',
      help: 'Outbox rows sent to the event bus and marked published',
      labelNames: ['topic'] as const,
    }),
    failures: counter(registry, {
      name: 'outbox_publish_failures_total',
      help: 'Failed sends of outbox rows (each failed row counts once per attempt)',
      labelNames: ['topic'] as const,
    }),
    lag: histogram(registry, {
      name: 'outbox_publish_lag_seconds',
      help: 'Time from outbox insert (created_at) to published_at',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    }),
  };
}

export type OutboxMetrics = ReturnType<typeof outboxMetrics>;
