import type { Db } from '../../../platform/db/index.ts';
import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { RealtimeMetrics } from './metrics.ts';
import { deleteDoneBefore } from './outbox-sql.ts';

export const REALTIME_RETENTION_JOB = 'messenger-realtime-retention';

/** Rows per DELETE: short statements, so the dispatcher's claims never wait long behind one. */
const RETENTION_BATCH = 5000;
/** A run stops starting deletes after this; what is left goes with the next hourly run. */
const RETENTION_MAX_RUN_MS = 5 * 60_000;

/**
 * RetentionDone (seed 000): Done rows older than the retention are deleted, in bounded DELETEs
 * (the claim does the work), stopping between them when asked.
 */
export function realtimeRetentionJob(
  db: Db,
  opts: { retentionHours: number; cron?: string; metrics?: Pick<RealtimeMetrics, 'retentionDeleted'> },
): BatchWorker {
  return defineBatchWorker({
    name: REALTIME_RETENTION_JOB,
    cron: opts.cron ?? '23 * * * *',
    singleRunner: true,
    settings: { batchSize: RETENTION_BATCH, maxRunMs: RETENTION_MAX_RUN_MS },
    phases: (run) => {
      run.count('deleted', 0);
      const cutoff = new Date(run.now().getTime() - opts.retentionHours * 3_600_000);
      return [
        {
          name: 'done',
          async claim(limit, run) {
            const ids = await deleteDoneBefore(db, cutoff, limit);
            run.count('deleted', ids.length);
            opts.metrics?.retentionDeleted.inc(ids.length);
            return ids.map((id) => ({ id }));
          },
        },
      ];
    },
  });
}
