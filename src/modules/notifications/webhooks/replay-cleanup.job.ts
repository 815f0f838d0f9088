import type { Db } from '../../../platform/db/index.ts';
import { defineBatchWorker, type BatchWorker } from '../../../platform/jobs/index.ts';
import { WEBHOOK_REPLAY_CLEANUP_JOB } from '../model.ts';
import { deleteExpiredMarks } from './replay-sql.ts';

/** Marks per DELETE: short statements, so a receipt's insert never waits long behind one. */
const CLEANUP_BATCH = 1000;
/** A run starts no new DELETE after this; the next run takes the rest. */
const CLEANUP_MAX_RUN_MS = 60_000;
/** Marks live minutes (the signature window), so a few runs an hour keep the table small. */
const CLEANUP_EVERY_MS = 10 * 60_000;

/**
 * Forgets delivery-webhook signatures whose window is over (the signature check refuses them as
 * stale by then): a bounded DELETE … RETURNING is the claim and the work, repeated while it comes
 * back full. One replica at a time.
 */
export function webhookReplayCleanupJob(db: Db): BatchWorker {
  return defineBatchWorker({
    name: WEBHOOK_REPLAY_CLEANUP_JOB,
    every: CLEANUP_EVERY_MS,
    singleRunner: true,
    settings: { batchSize: CLEANUP_BATCH, maxRunMs: CLEANUP_MAX_RUN_MS },
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
