import type pg from 'pg';
import type { Queryable } from '../../../platform/db/index.ts';
import { batchPhase, defineBatchWorker, type BatchRun, type BatchWorker } from '../../../platform/jobs/index.ts';
import { counter, type Registry } from '../../../platform/observability/index.ts';
import { MINUTE_MS } from '../rules.ts';
import type { ActivityRetentionSettings } from '../settings.ts';

export const ACTIVITY_RETENTION_JOB = 'activity-retention';

/** A run starts no new batch after this; the next run continues. */
const RETENTION_MAX_RUN_MS = 5 * MINUTE_MS;

/** The retention line: `months` calendar months before now (UTC). */
export function retentionCutoff(now: Date, months: number): Date {
  const d = new Date(now);
  d.setUTCMonth(d.getUTCMonth() - months);
  return d;
}

type Deleted = { id: string };

/** Inactive views that ended before the cutoff, a batch at a time. */
export async function deleteOldViews(c: Queryable, cutoff: Date, limit: number): Promise<Deleted[]> {
  const { rows } = await c.query<Deleted>(
    `delete from user_activity.property_object_views where id in (
       select id from user_activity.property_object_views
        where status = 'Inactive' and ended_at < $1
        order by ended_at limit $2
        for update skip locked)
     returning id`,
    [cutoff, limit],
  );
  return rows;
}

/** Inactive sessions that ended before the cutoff and have no views left (the FK is restrict). */
export async function deleteOldSessions(c: Queryable, cutoff: Date, limit: number): Promise<Deleted[]> {
  const { rows } = await c.query<Deleted>(
    `delete from user_activity.sessions where id in (
       select s.id from user_activity.sessions s
        where s.status = 'Inactive' and s.ended_at < $1
          and not exists (select 1 from user_activity.property_object_views v where v.session_id = s.id)
        order by s.ended_at limit $2
        for update skip locked)
     returning id`,
    [cutoff, limit],
  );
  return rows;
}

/** Stats dedupe markers as old as the rows they stood for: no redelivery reaches that far back. */
export async function deleteOldCountedViews(c: Queryable, cutoff: Date, limit: number): Promise<Deleted[]> {
  const { rows } = await c.query<Deleted>(
    `delete from user_activity.counted_property_object_views where property_object_view_id in (
       select property_object_view_id from user_activity.counted_property_object_views
        where counted_at < $1 order by counted_at limit $2)
     returning property_object_view_id as id`,
    [cutoff, limit],
  );
  return rows;
}

/** The three deletes in order: views go before their sessions (the FK is restrict). */
const STEPS = [
  { count: 'deletedViews', entity: 'view', remove: deleteOldViews },
  { count: 'deletedSessions', entity: 'session', remove: deleteOldSessions },
  { count: 'deletedCountedViews', entity: 'counted_view', remove: deleteOldCountedViews },
] as const;

/**
 * ActivityRetentionJob: deletes Inactive views, then Inactive sessions, that ended more than
 * USER_ACTIVITY_RETENTION_MONTHS ago (device data included), then the stats' dedupe markers as old;
 * each phase is a bounded DELETE repeated while it comes back full. Single-runner.
 */
export function createActivityRetention(deps: { pool: pg.Pool; registry: Registry; settings: ActivityRetentionSettings }): BatchWorker {
  const { pool, settings } = deps;
  const deleted = counter(deps.registry, {
    name: 'user_activity_retention_deleted_total',
    help: 'Rows deleted by ActivityRetentionJob',
    labelNames: ['entity'] as const,
  });
  const cutoffs = new WeakMap<BatchRun, Date>();

  return defineBatchWorker({
    name: ACTIVITY_RETENTION_JOB,
    every: settings.USER_ACTIVITY_RETENTION_INTERVAL_MINUTES * MINUTE_MS,
    singleRunner: true,
    settings: { batchSize: settings.USER_ACTIVITY_RETENTION_BATCH_SIZE, maxRunMs: RETENTION_MAX_RUN_MS },
    phases(run) {
      const cutoff = retentionCutoff(run.now(), settings.USER_ACTIVITY_RETENTION_MONTHS);
      cutoffs.set(run, cutoff);
      return STEPS.map((step) => {
        run.count(step.count, 0);
        return batchPhase<Deleted>({
          name: step.entity,
          async claim(limit) {
            const rows = await step.remove(pool, cutoff, limit);
            run.count(step.count, rows.length);
            deleted.inc({ entity: step.entity }, rows.length);
            return rows;
          },
        });
      });
    },
    async finish(run) {
      const { deletedViews, deletedSessions, deletedCountedViews } = run.counts;
      if (deletedViews! + deletedSessions! + deletedCountedViews! > 0) {
        run.log.info({ ...run.counts, cutoff: cutoffs.get(run)!.toISOString() }, 'activity retention deleted old rows');
      }
    },
  });
}
