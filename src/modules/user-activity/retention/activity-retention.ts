import type { Db } from '../../../platform/db/index.ts';
import { defineSweep, type BatchRun, type BatchWorker } from '../../../platform/jobs/index.ts';
import { counter, type Registry } from '../../../platform/observability/index.ts';
import type { ActivityRetentionSettings } from '../settings.ts';
import { deleteOldCountedViews, deleteOldSessions, deleteOldViews } from './retention-sql.ts';
import { USER_ACTIVITY_DEFAULTS } from '../defaults.ts';

export const ACTIVITY_RETENTION_JOB = 'activity-retention';

/** The retention line: `months` calendar months before now (UTC). */
export function retentionCutoff(now: Date, months: number): Date {
  const d = new Date(now);
  d.setUTCMonth(d.getUTCMonth() - months);
  return d;
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
export function createActivityRetention(deps: {
  db: Db;
  registry: Registry;
  settings: ActivityRetentionSettings;
  /** Tests: a smaller batch than USER_ACTIVITY_DEFAULTS.retentionBatchSize. */
  batchSize?: number;
}): BatchWorker {
  const { db, settings } = deps;
  const deleted = counter(deps.registry, {
    name: 'user_activity_retention_deleted_total',
    help: 'Rows deleted by ActivityRetentionJob',
    labelNames: ['entity'] as const,
  });

  return defineSweep<{ cutoff: Date }>({
    name: ACTIVITY_RETENTION_JOB,
    every: USER_ACTIVITY_DEFAULTS.retentionIntervalMs,
    batchSize: deps.batchSize ?? USER_ACTIVITY_DEFAULTS.retentionBatchSize,
    maxRunMs: USER_ACTIVITY_DEFAULTS.retentionMaxRunMs,
    start: (run) => ({ cutoff: retentionCutoff(run.now(), settings.USER_ACTIVITY_RETENTION_MONTHS) }),
    // On the kernel's `job completed` line, at info when rows were deleted.
    runFields: ({ cutoff }) => ({ cutoff: cutoff.toISOString() }),
    steps: STEPS.map((step) => ({
      name: step.entity,
      count: step.count,
      async sweep(limit: number, _run: BatchRun, { cutoff }: { cutoff: Date }) {
        const rows = await step.remove(db, cutoff, limit);
        deleted.inc({ entity: step.entity }, rows.length);
        return rows;
      },
    })),
  });
}
