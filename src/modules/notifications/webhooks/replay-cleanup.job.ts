import type { Db } from '../../../platform/db/index.ts';
import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import { WEBHOOK_REPLAY_CLEANUP_JOB } from '../model.ts';
import type { NotificationsSettings } from '../settings.ts';
import { deleteExpiredMarks } from './replay-sql.ts';

/**
 * Forgets delivery-webhook signatures whose window is over (the signature check refuses them as
 * stale by then): a bounded DELETE … RETURNING is the claim and the work, repeated while it comes
 * back full. One replica at a time.
 */
export function webhookReplayCleanupJob(db: Db, s: NotificationsSettings): BatchWorker {
  return defineBatchWorker({
    name: WEBHOOK_REPLAY_CLEANUP_JOB,
    every: s.NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_POLLING_INTERVAL,
    singleRunner: true,
    settings: {
      batchSize: s.NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_BATCH_SIZE,
      maxRunMs: s.NOTIFICATIONS_WEBHOOK_REPLAY_CLEANUP_MAX_RUN_DURATION,
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
