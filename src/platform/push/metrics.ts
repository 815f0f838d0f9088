import type { Db } from '../db/index.ts';
import { counter, dbGauge, histogram, type Registry } from '../observability/index.ts';
import type { Clock } from '../time.ts';
import { countPending, realtimeOutboxState, type RealtimeOutboxState } from './outbox-sql.ts';

/**
 * The seed's metrics (names exactly as seed 000 spells them). Alerts: rate of retried_total (errors
 * spike), messenger_realtime_pending growing, lag p95 > 1 s, quarantined_total > 0, and no runs for
 * a minute (job_last_success_timestamp_seconds{job="messenger-realtime-dispatch"}); the hub's
 * disconnect rate is hub_disconnects_total.
 */
export function createRealtimeMetrics(registry: Registry, db: Db) {
  return {
    // Database down: the scrape keeps the last value (metrics_db_gauge_stale_seconds says how old).
    pending: dbGauge(registry, {
      name: 'messenger_realtime_pending',
      help: 'Pending rows in push.realtime_outbox (backlog), read at scrape',
      read: () => countPending(db),
    }),
    lag: histogram<'kind'>(registry, {
      name: 'messenger_realtime_lag_seconds',
      help: 'Persist → push lag of delivered rows: now − CreatedAt when a row becomes Done (SLO p95 < 1 s)',
      labelNames: ['kind'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    }),
    dispatched: counter<'kind'>(registry, {
      name: 'messenger_realtime_dispatched_total',
      help: 'realtime_outbox rows pushed to the hub and marked Done',
      labelNames: ['kind'],
    }),
    retried: counter<'kind'>(registry, {
      name: 'messenger_realtime_retried_total',
      help: 'Pushes that failed transiently (hub or backplane unavailable); the row stays Pending with a backoff',
      labelNames: ['kind'],
    }),
    quarantined: counter<'kind' | 'reason'>(registry, {
      name: 'messenger_realtime_quarantined_total',
      help: 'Rows quarantined (RealtimeDispatchQuarantinedEvent): attempts exhausted or referenced entity gone',
      labelNames: ['kind', 'reason'],
    }),
    retentionDeleted: counter(registry, {
      name: 'messenger_realtime_retention_deleted_total',
      help: 'Done realtime_outbox rows deleted by the retention job',
    }),
  };
}

export type RealtimeMetrics = ReturnType<typeof createRealtimeMetrics>;

/**
 * The outbox's current state for the alerts (the realtime alert rules in deploy/prometheus/): Quarantined
 * rows now — the counter above starts at 0 on every restart while the rows stay — and how long the
 * oldest Pending row has waited, which rises while no dispatcher pushes even when no run reports.
 * One query serves both gauges of a scrape; database down: dbGauge keeps the last values.
 */
export function realtimeStateGauges(registry: Registry, db: Db, clock: Clock): void {
  let inFlight: Promise<RealtimeOutboxState> | undefined;
  const read = () =>
    (inFlight ??= realtimeOutboxState(db, clock.now()).finally(() => {
      inFlight = undefined;
    }));
  dbGauge(registry, {
    name: 'messenger_realtime_quarantined',
    help: 'Quarantined rows in push.realtime_outbox now (alert when > 0; runbook: requeue after the fix)',
    read: async () => (await read()).quarantined,
  });
  dbGauge(registry, {
    name: 'messenger_realtime_oldest_pending_age_seconds',
    help: 'now − CreatedAt of the oldest Pending push.realtime_outbox row (0 when none), read at scrape',
    read: async () => (await read()).oldestPendingAgeSeconds,
  });
}
