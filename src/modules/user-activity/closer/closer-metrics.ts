import { counter, dbGauge, gauge, histogram, type Registry } from '../../../platform/observability/index.ts';
import type { Clock } from '../../../platform/time.ts';
import type { Db } from '../../../platform/db/index.ts';
import { stuckCutoff } from '../rules.ts';
import { countIdleActiveRows } from '../sessions/session-sql.ts';

/** ActivityCloserJob metrics, named exactly as seed 001 spells them. */
export function closerMetrics(registry: Registry) {
  return {
    runDuration: histogram(registry, {
      name: 'activity_closer_run_duration_ms',
      help: 'Duration of one ActivityCloserJob run in milliseconds',
      buckets: [5, 25, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000],
    }),
    sessionsClosed: counter(registry, {
      name: 'activity_closer_sessions_closed_total',
      help: 'Sessions closed for inactivity by ActivityCloserJob',
    }),
    viewsClosed: counter(registry, {
      name: 'activity_closer_views_closed_total',
      help: 'Property-object views closed by ActivityCloserJob (hanging views and views of stale sessions)',
    }),
    backlog: gauge(registry, {
      name: 'activity_closer_batch_backlog',
      help: 'Active rows still idle past the cutoff after the last ActivityCloserJob run',
    }),
    errors: counter(registry, {
      name: 'activity_closer_errors_total',
      help: 'Rows ActivityCloserJob failed to close, and batches it could not read at all (database down); each is logged, the rows stay Active for the next tick; alert when it grows',
      labelNames: ['phase'] as const,
    }),
    closeLag: histogram(registry, {
      name: 'activity_closer_close_lag_seconds',
      help: 'now − LastActivityAt when a row is closed (SLO: ≤ InactivityThreshold + PollingInterval for 99%)',
      labelNames: ['entity'] as const,
      buckets: [60, 300, 600, 660, 720, 780, 840, 900, 960, 1080, 1200, 1440, 1800, 3600, 7200],
    }),
  };
}

export type CloserMetrics = ReturnType<typeof closerMetrics>;

/**
 * The "stuck backlog" alert of seed 001: Active rows idle for more than 2 × InactivityThreshold.
 * Read from the database at scrape time, so it rises even when no closer runs at all.
 */
export function stuckRowsGauge(registry: Registry, db: Db, clock: Clock, thresholdMs: number) {
  // Database down: dbGauge keeps the last values; /health/ready reports the outage.
  return dbGauge(registry, {
    name: 'user_activity_stuck_active_rows',
    help: 'Active sessions/views with LastActivityAt older than 2 × InactivityThreshold (alert when > 0)',
    labelNames: ['entity'] as const,
    async read() {
      const { sessions, views } = await countIdleActiveRows(db, stuckCutoff(clock.now(), thresholdMs));
      return [
        { labels: { entity: 'session' }, value: sessions },
        { labels: { entity: 'view' }, value: views },
      ];
    },
  });
}
