import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { defineSweep, type BatchWorker } from '../../../platform/jobs/index.ts';

export const REACTIONS_RETENTION_JOB = 'messenger-reactions-retention';

export interface ReactionsRetentionOptions {
  /** A reaction taken back longer ago than this loses its row (MESSENGER_DEFAULTS.reactionTakenBackRetentionMs). */
  retentionMs: number;
  intervalMs: number;
  batchSize: number;
  maxRunMs: number;
}

/**
 * Deletes up to `limit` reactions taken back before `before` (ix_message_reactions_removed serves
 * the pick); returns their ids. The rows are locked as they are picked and skipped when another
 * transaction holds them, and FOR UPDATE re-reads a row changed since the statement began, so a
 * reaction given again meanwhile (removed_at null) is never deleted.
 */
export async function deleteTakenBack(db: Db, before: Date, limit: number): Promise<{ id: string }[]> {
  const { rows } = await query<{ id: string }>(db, sql`
    delete from messenger.message_reactions r
     using (select id from messenger.message_reactions
             where removed_at < ${before.toISOString()}::timestamptz
             limit ${limit}
             for update skip locked) gone
     where r.id = gone.id
    returning r.id`);
  return rows;
}

/**
 * The messenger's reactions retention: rows of reactions taken back longer ago than the retention
 * (MESSENGER_DEFAULTS.reactionTakenBackRetentionMs says why they are kept that long and no longer)
 * are deleted in bounded DELETEs, the claim being the work, repeated while one comes back full; live
 * reactions are never touched. One replica at a time.
 */
export function reactionsRetentionJob(db: Db, opts: ReactionsRetentionOptions): BatchWorker {
  return defineSweep<{ cutoff: Date }>({
    name: REACTIONS_RETENTION_JOB,
    every: opts.intervalMs,
    batchSize: opts.batchSize,
    maxRunMs: opts.maxRunMs,
    start: (run) => ({ cutoff: new Date(run.now().getTime() - opts.retentionMs) }),
    runFields: ({ cutoff }) => ({ cutoff: cutoff.toISOString() }),
    steps: [{ name: 'taken-back', count: 'deleted', sweep: (limit, _run, { cutoff }) => deleteTakenBack(db, cutoff, limit) }],
  });
}
