import type { Db } from '../../../platform/db/index.ts';
import { defineSweep, type BatchWorker } from '../../../platform/jobs/index.ts';
import { WEBHOOK_REPLAY_CLEANUP_JOB } from '../model.ts';
import { deleteExpiredMarks } from './replay-sql.ts';
import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';

/**
 * Forgets delivery-webhook signatures whose window is over (the signature check refuses them as
 * stale by then): a bounded DELETE … RETURNING is the claim and the work, repeated while it comes
 * back full. One replica at a time.
 */
export function webhookReplayCleanupJob(db: Db): BatchWorker {
  return defineSweep({
    name: WEBHOOK_REPLAY_CLEANUP_JOB,
    every: NOTIFICATIONS_DEFAULTS.webhookReplayCleanupIntervalMs,
    batchSize: NOTIFICATIONS_DEFAULTS.webhookReplayCleanupBatchSize,
    maxRunMs: NOTIFICATIONS_DEFAULTS.webhookReplayCleanupMaxRunMs,
    steps: [{ name: 'expired', count: 'deleted', sweep: (limit, run) => deleteExpiredMarks(db, run.now(), limit) }],
  });
}
