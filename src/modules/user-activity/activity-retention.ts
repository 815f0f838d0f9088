import type pg from 'pg';
import type { JobContext, JobDefinition } from '../../platform/jobs/types.ts';
import { counter, type Registry } from '../../platform/observability/index.ts';
import type { Queryable } from '../../platform/db/index.ts';

export const ACTIVITY_RETENTION_JOB = 'activity-retention';

export interface ActivityRetentionOptions {
  retentionMonths: number;
  batchSize: number;
  intervalMs: number;
  /** A run stops starting new batches after this; the next run continues. */
  maxRunDurationMs: number;
}

export interface RetentionCounts {
  [name: string]: number;
  deletedViews: number;
  deletedSessions: number;
  deletedCountedViews: number;
}

/** The retention line: `months` calendar months before now (UTC). */
export function retentionCutoff(now: Date, months: number): Date {
  const d = new Date(now);
  d.setUTCMonth(d.getUTCMonth() - months);
  return d;
}

/** Inactive views that ended before the cutoff, a batch at a time. */
export async function deleteOldViews(c: Queryable, cutoff: Date, limit: number): Promise<number> {
  const res = await c.query(
    `delete from user_activity.property_object_views where id in (
       select id from user_activity.property_object_views
        where status = 'Inactive' and ended_at < $1
        order by ended_at limit $2
        for update skip locked)`,
    [cutoff, limit],
  );
  return res.rowCount ?? 0;
}

/** Inactive sessions that ended before the cutoff and have no views left (the FK is restrict). */
export async function deleteOldSessions(c: Queryable, cutoff: Date, limit: number): Promise<number> {
  const res = await c.query(
    `delete from user_activity.sessions where id in (
       select s.id from user_activity.sessions s
        where s.status = 'Inactive' and s.ended_at < $1
          and not exists (select 1 from user_activity.property_object_views v where v.session_id = s.id)
        order by s.ended_at limit $2
        for update skip locked)`,
    [cutoff, limit],
  );
  return res.rowCount ?? 0;
}

/** Stats dedupe markers as old as the rows they stood for: no redelivery reaches that far back. */
export async function deleteOldCountedViews(c: Queryable, cutoff: Date, limit: number): Promise<number> {
  const res = await c.query(
    `delete from user_activity.counted_property_object_views where property_object_view_id in (
       select property_object_view_id from user_activity.counted_property_object_views
        where counted_at < $1 order by counted_at limit $2)`,
    [cutoff, limit],
  );
  return res.rowCount ?? 0;
}

/**
 * ActivityRetentionJob: deletes Inactive views, then Inactive sessions, that ended more than
 * `retentionMonths` ago (device data included), in batches; views go before their sessions.
 */
export function createActivityRetention(deps: { pool: pg.Pool; registry: Registry; options: ActivityRetentionOptions }) {
  const { pool, options } = deps;
  if (!(options.retentionMonths >= 1 && Number.isInteger(options.batchSize) && options.batchSize > 0)) {
    throw new Error('ActivityRetentionJob: retentionMonths must be ≥ 1 and batchSize a positive integer');
  }
  const deleted = counter(deps.registry, {
    name: 'user_activity_retention_deleted_total',
    help: 'Rows deleted by ActivityRetentionJob',
    labelNames: ['entity'] as const,
  });

  async function purge(ctx: Pick<JobContext, 'signal' | 'now' | 'log'>): Promise<RetentionCounts> {
    const startedAt = ctx.now();
    const cutoff = retentionCutoff(startedAt, options.retentionMonths);
    const deadline = performance.now() + options.maxRunDurationMs;
    const counts: RetentionCounts = { deletedViews: 0, deletedSessions: 0, deletedCountedViews: 0 };
    const steps: ['deletedViews' | 'deletedSessions' | 'deletedCountedViews', string, (c: Queryable, cut: Date, n: number) => Promise<number>][] = [
      ['deletedViews', 'view', deleteOldViews],
      ['deletedSessions', 'session', deleteOldSessions],
      ['deletedCountedViews', 'counted_view', deleteOldCountedViews],
    ];
    for (const [key, entity, step] of steps) {
      for (;;) {
        if (ctx.signal.aborted || performance.now() >= deadline) return counts;
        const n = await step(pool, cutoff, options.batchSize);
        counts[key] += n;
        deleted.inc({ entity }, n);
        if (n < options.batchSize) break;
      }
    }
    if (counts.deletedViews + counts.deletedSessions + counts.deletedCountedViews > 0) {
      ctx.log.info({ ...counts, cutoff: cutoff.toISOString() }, 'activity retention deleted old rows');
    }
    return counts;
  }

  return { purge, options };
}

export function activityRetentionJob(retention: ReturnType<typeof createActivityRetention>): JobDefinition {
  return {
    name: ACTIVITY_RETENTION_JOB,
    every: retention.options.intervalMs,
    singleRunner: true,
    run: (ctx) => retention.purge(ctx),
  };
}
