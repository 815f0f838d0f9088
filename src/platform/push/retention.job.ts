import type { Db } from '../db/index.ts';
import { defineSweep, type BatchRun, type BatchWorker } from '../jobs/index.ts';
import type { RealtimeMetrics } from './metrics.ts';
import { deleteDoneBefore } from './outbox-sql.ts';
import { trimStream } from './stream-sql.ts';

export const REALTIME_RETENTION_JOB = 'messenger-realtime-retention';

/**
 * RetentionDone (seed 000): Done rows older than the retention are deleted, in bounded DELETEs
 * (the claim does the work), stopping between them when asked; then the event stream's events
 * older than its own retention, the same way (its horizon moves past them).
 */
export function realtimeRetentionJob(
  db: Db,
  opts: { retentionMs: number; eventsRetentionMs: number; cron: string; batchSize: number; maxRunMs: number; metrics?: Pick<RealtimeMetrics, 'retentionDeleted'> },
): BatchWorker {
  const before = (run: BatchRun, ms: number) => new Date(run.now().getTime() - ms);
  return defineSweep({
    name: REALTIME_RETENTION_JOB,
    cron: opts.cron,
    batchSize: opts.batchSize,
    maxRunMs: opts.maxRunMs,
    start: (run) => ({ cutoff: before(run, opts.retentionMs), eventsCutoff: before(run, opts.eventsRetentionMs) }),
    steps: [
      {
        name: 'done',
        count: 'deleted',
        async sweep(limit, _run, { cutoff }) {
          const ids = await deleteDoneBefore(db, cutoff, limit);
          opts.metrics?.retentionDeleted.inc(ids.length);
          return ids.map((id) => ({ id }));
        },
      },
      {
        name: 'events',
        count: 'eventsDeleted',
        sweep: async (limit, _run, { eventsCutoff }) => (await trimStream(db, eventsCutoff, limit)).map((p) => ({ id: String(p) })),
      },
    ],
  });
}
