import { sql } from 'drizzle-orm';
import { TOPICS } from '../../event-topics.ts';
import { counter, dbGauge, histogram, type Registry } from '../../platform/observability/index.ts';
import type { Clock } from '../../platform/time.ts';
import { query, type Db } from '../../platform/db/index.ts';
import { queueStats, type QueueStats } from './access-fanout/fanout-sql.ts';
import { IDENTITY_DEFAULTS } from './defaults.ts';

/**
 * Metrics of the identity context. Names of seed 003 are kept exactly; the rest carry the
 * `identity_` prefix. Queue gauges are read from the database at scrape time, so a stopped worker
 * still shows a growing backlog (alert: queue_backlog > 100 for 5 min) and Failed tasks (poison).
 * "No successful run for 5 min" is job_last_success_timestamp_seconds{job="identity-access-fanout"}.
 */
export function createIdentityMetrics(registry: Registry, db: Db, clock: Clock) {
  // One query serves every gauge of a scrape: prom-client collects them side by side, so they
  // all join the query in flight; the next scrape reads afresh.
  // Database down: the query rejects and dbGauge keeps the last values.
  let inFlight: Promise<QueueStats> | undefined;
  const read = () => {
    inFlight ??= queueStats(db, clock.now()).finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
  const fromStats = (name: string, help: string, pick: (s: QueueStats) => number) =>
    dbGauge(registry, {
      name,
      help,
      read: async () => pick(await read()),
    });

  fromStats('identity_access_fanout_queue_backlog', 'Fan-out tasks waiting: Pending plus InProgress with an expired lease', (s) => s.backlog);
  fromStats('identity_access_fanout_tasks_failed', 'Fan-out tasks in Failed (poison; replay through the runbook) — alert when > 0', (s) => s.failed);
  fromStats('identity_access_fanout_tasks_in_progress', 'Fan-out tasks held by a worker under a live lease', (s) => s.inProgress);
  fromStats(
    'identity_access_fanout_oldest_backlog_age_seconds',
    'Age of the oldest waiting fan-out task (0 when none)',
    (s) => s.oldestBacklogAgeSeconds,
  );
  // Counted over the outbox's pending partial index.
  dbGauge(registry, {
    name: 'identity_access_events_unpublished',
    help: 'UserAccessChanged events in the outbox not yet on pin.identity.access.v1 (alert: > 1000)',
    read: () => unpublishedEvents(db, TOPICS.identityAccess),
  });

  return {
    taskDuration: histogram(registry, {
      name: 'identity_access_fanout_task_duration_ms',
      help: 'Fan-out task time from its first lease (StartedAt) to Completed, in milliseconds',
      buckets: [50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000],
    }),
    users: counter(registry, {
      name: 'identity_access_fanout_users_total',
      help: 'UserAccessChanged events written by the fan-out worker (one per user per committed page)',
    }),
    errors: counter(registry, {
      name: 'identity_access_fanout_errors_total',
      help: 'Fan-out failures: a page rolled back (page_failed), a lease lost to another worker (lease_lost), the queue unreadable (claim_failed: database down)',
      labelNames: ['kind'] as const,
    }),
    taskLag: histogram(registry, {
      name: 'identity_access_fanout_task_lag_seconds',
      help: 'now − CreatedAt when a fan-out task completes (SLO: ≤ 300 s for roles up to 50k users)',
      buckets: [1, 5, 15, 30, 60, 120, 180, 300, 600, 1800],
    }),
    size: histogram(registry, {
      name: 'identity_access_fanout_size',
      help: 'Users announced per role permission change: inline in set-role-permissions, or per completed task',
      labelNames: ['path'] as const,
      buckets: [0, 1, 10, 100, 500, 1000, 5000, 10_000, 50_000, 100_000, 500_000],
    }),
    batches: counter(registry, {
      name: 'identity_access_fanout_batches_total',
      help: 'Fan-out pages committed (events + checkpoint)',
    }),
    tasksCompleted: counter(registry, {
      name: 'identity_access_fanout_tasks_completed_total',
      help: 'Fan-out tasks that reached Completed',
    }),
    tasksPoisoned: counter(registry, {
      name: 'identity_access_fanout_tasks_poisoned_total',
      help: 'Fan-out tasks moved to Failed after MaxAttempts',
    }),
    accessEvents: counter(registry, {
      name: 'identity_access_changed_events_total',
      help: 'UserAccessChanged events written to the outbox (inline, by the fan-out worker or the expiry worker), by ChangeReason',
      labelNames: ['reason'] as const,
    }),
    userEvents: counter(registry, {
      name: 'identity_user_events_total',
      help: 'Events written to pin.identity.users.v1, by event type',
      labelNames: ['event_type'] as const,
    }),
  };
}

export type IdentityMetrics = ReturnType<typeof createIdentityMetrics>;

/** Counted up to IDENTITY_DEFAULTS.unpublishedCountCap (far past the alert threshold), so a scrape after a long outage stays cheap. */
async function unpublishedEvents(db: Db, topic: string): Promise<number> {
  const { rows } = await query<{ n: number }>(
    db,
    sql`select count(*)::int as n from (
          select 1 from platform.outbox where published_at is null and topic = ${topic} limit ${IDENTITY_DEFAULTS.unpublishedCountCap}) capped`,
  );
  return rows[0]?.n ?? 0;
}
