import type { Db } from '../../../platform/db/index.ts';
import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import type { RealtimeMetrics } from './metrics.ts';
import { deleteDoneBefore } from './outbox-sql.ts';
import { trimStream } from '../events/stream-sql.ts';

export const REALTIME_RETENTION_JOB = 'messenger-realtime-retention';

/**
 * RetentionDone (seed 000): Done rows older than the retention are deleted, in bounded DELETEs
 * (the claim does the work), stopping between them when asked; then the event stream's events
 * older than its own retention, the same way (its horizon moves past them).
 */
export function realtimeRetentionJob(
  db: Db,
  opts: { retentionHours: number; eventsRetentionHours: number; cron: string; batchSize: number; maxRunMs: number; metrics?: Pick<RealtimeMetrics, 'retentionDeleted'> },
): BatchWorker {
  return defineBatchWorker({
    name: REALTIME_RETENTION_JOB,
    cron: opts.cron,
    singleRunner: true,
    settings: { batchSize: opts.batchSize, maxRunMs: opts.maxRunMs },
    phases: (run) => {
      run.count('deleted', 0);
      run.count('eventsDeleted', 0);
      const cutoff = new Date(run.now().getTime() - opts.retentionHours * 3_600_000);
      const eventsCutoff = new Date(run.now().getTime() - opts.eventsRetentionHours * 3_600_000);
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
        {
          name: 'events',
          async claim(limit, run) {
            const positions = await trimStream(db, eventsCutoff, limit);
            run.count('eventsDeleted', positions.length);
            return positions.map((p) => ({ id: String(p) }));
          },
        },
      ];
    },
  });
}
