import type { Db } from '../../../platform/db/index.ts';
import { defineSweep, type BatchWorker } from '../../../platform/jobs/index.ts';
import { WEBHOOK_REPLAY_CLEANUP_JOB } from '../model.ts';
import { deleteExpiredMarks } from './replay-sql.ts';

/**
 * Remembered signatures live minutes (the skew window), so a sweep every 10 min keeps the table
 * small; short DELETEs so a webhook receipt never waits long behind one. Fixed values: no operator
 * has a reason to tune them.
 */
const CLEANUP_INTERVAL_MS = 10 * 60_000;
const CLEANUP_BATCH_SIZE = 1000;
const CLEANUP_MAX_RUN_MS = 60_000;

/**
 * Forgets delivery-webhook signatures whose window is over (the signature check refuses them as
 * stale by then): a bounded DELETE … RETURNING is the claim and the work, repeated while it comes
 * back full. One replica at a time.
 */
export function webhookReplayCleanupJob(db: Db): BatchWorker {
  return defineSweep({
    name: WEBHOOK_REPLAY_CLEANUP_JOB,
    every: CLEANUP_INTERVAL_MS,
    batchSize: CLEANUP_BATCH_SIZE,
    maxRunMs: CLEANUP_MAX_RUN_MS,
    steps: [{ name: 'expired', count: 'deleted', sweep: (limit, run) => deleteExpiredMarks(db, run.now(), limit) }],
  });
}
