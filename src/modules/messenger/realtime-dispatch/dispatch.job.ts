import type { Queryable } from '../../../platform/db/index.ts';
import type { JobContext, JobDefinition } from '../../../platform/jobs/index.ts';
import type { RealtimeDispatcher } from './dispatcher.ts';
import type { RealtimeMetrics } from './metrics.ts';
import { REALTIME_OUTBOX_CHANNEL, deleteDoneBefore } from './outbox-sql.ts';

/** Lock key `job:scheduled:messenger-realtime-dispatch` (the platform prefixes `job:scheduled:`). */
export const REALTIME_DISPATCH_JOB = 'messenger-realtime-dispatch';
export const REALTIME_RETENTION_JOB = 'messenger-realtime-retention';

/**
 * RealtimeDispatchJob: every PollingInterval and at once on NOTIFY realtime_outbox (sent by the
 * owner's committing transaction), or sooner through `connectWake` in the replica that committed;
 * single runner through the platform's advisory lock (busy → the run is skipped). Runs that found
 * nothing log at debug (the runner's rule for all-zero counts).
 */
export function realtimeDispatchJob(
  dispatcher: RealtimeDispatcher,
  opts: { pollingIntervalMs: number; connectWake?: (wake: () => void) => void },
): JobDefinition {
  return {
    name: REALTIME_DISPATCH_JOB,
    every: opts.pollingIntervalMs,
    singleRunner: true,
    wakeChannel: REALTIME_OUTBOX_CHANNEL,
    ...(opts.connectWake ? { connectWake: opts.connectWake } : {}),
    run: async (ctx) => ({ ...(await dispatcher.runOnce(ctx)) }),
  };
}

const RETENTION_BATCH = 5000;

/** RetentionDone: deletes Done rows older than the retention, in bounded batches, stopping between them when asked. */
export async function deleteExpiredDone(
  q: Queryable,
  retentionHours: number,
  ctx: Pick<JobContext, 'signal' | 'now'>,
  metrics?: Pick<RealtimeMetrics, 'retentionDeleted'>,
): Promise<{ deleted: number }> {
  const cutoff = new Date(ctx.now().getTime() - retentionHours * 3_600_000);
  let deleted = 0;
  while (!ctx.signal.aborted) {
    const n = await deleteDoneBefore(q, cutoff, RETENTION_BATCH);
    deleted += n;
    metrics?.retentionDeleted.inc(n);
    if (n < RETENTION_BATCH) break;
  }
  return { deleted };
}

export function realtimeRetentionJob(
  q: Queryable,
  opts: { retentionHours: number; cron?: string; metrics?: Pick<RealtimeMetrics, 'retentionDeleted'> },
): JobDefinition {
  return {
    name: REALTIME_RETENTION_JOB,
    cron: opts.cron ?? '23 * * * *',
    singleRunner: true,
    run: (ctx) => deleteExpiredDone(q, opts.retentionHours, ctx, opts.metrics),
  };
}
