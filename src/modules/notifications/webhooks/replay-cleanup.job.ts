import type { Db } from '../../../platform/db/index.ts';
import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
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
  return defineBatchWorker({
    name: WEBHOOK_REPLAY_CLEANUP_JOB,
    every: CLEANUP_INTERVAL_MS,
    singleRunner: true,
    settings: {
      batchSize: CLEANUP_BATCH_SIZE,
      maxRunMs: CLEANUP_MAX_RUN_MS,
    },
    counts: ['deleted'],
    phases: () => [
      {
        name: 'expired',
        async claim(limit, run) {
          const rows = await deleteExpiredMarks(db, run.now(), limit);
          run.count('deleted', rows.length);
          return rows;
        },
      },
    ],
  });
}
