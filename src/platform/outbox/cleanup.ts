import type { Queryable } from '../db/index.ts';
import { deleteInboxBefore } from '../events/inbox.ts';
import type { JobContext, JobDefinition } from '../jobs/types.ts';
import { deletePublishedBefore } from './sql.ts';

export const OUTBOX_CLEANUP_JOB = 'outbox-cleanup';

export interface OutboxCleanupOptions {
  pool: Queryable;
  /** Published outbox rows are kept this long (OUTBOX_RETENTION_HOURS). */
  outboxRetentionHours: number;
  /** Inbox (dedupe) rows are kept this long (INBOX_RETENTION_DAYS); redeliveries older than this are not caught. */
  inboxRetentionDays: number;
  /** Rows per DELETE statement; short statements keep locks and WAL bursts small. Default 1000. */
  chunkSize?: number;
  /** Job interval. Default 10 minutes. */
  intervalMs?: number;
}

const HOUR = 3_600_000;

/** Deletes old published outbox rows and old inbox rows in bounded chunks; stops between chunks on abort. */
export async function cleanupOutboxAndInbox(
  opts: OutboxCleanupOptions,
  ctx: Pick<JobContext, 'signal' | 'now'>,
): Promise<{ outboxDeleted: number; inboxDeleted: number }> {
  const chunk = opts.chunkSize ?? 1000;
  const now = ctx.now().getTime();
  const drain = async (deleteChunk: () => Promise<number>) => {
    let total = 0;
    while (!ctx.signal.aborted) {
      const n = await deleteChunk();
      total += n;
      if (n < chunk) break;
    }
    return total;
  };
  const outboxCutoff = new Date(now - opts.outboxRetentionHours * HOUR);
  const inboxCutoff = new Date(now - opts.inboxRetentionDays * 24 * HOUR);
  const outboxDeleted = await drain(() => deletePublishedBefore(opts.pool, outboxCutoff, chunk));
  const inboxDeleted = await drain(() => deleteInboxBefore(opts.pool, inboxCutoff, chunk));
  return { outboxDeleted, inboxDeleted };
}

export function outboxCleanupJob(opts: OutboxCleanupOptions): JobDefinition {
  if (!(opts.outboxRetentionHours > 0) || !(opts.inboxRetentionDays > 0)) {
    throw new Error('outbox cleanup: retention must be positive');
  }
  return {
    name: OUTBOX_CLEANUP_JOB,
    every: opts.intervalMs ?? 10 * 60_000,
    singleRunner: true,
    run: (ctx) => cleanupOutboxAndInbox(opts, ctx),
  };
}
