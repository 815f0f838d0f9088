import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { defineSweep, type BatchRun, type BatchWorker } from '../jobs/index.ts';
import { OUTBOX_DEFAULTS } from './defaults.ts';

/**
 * Retention of the integration outbox and the consumers' inbox, on the kernel's batch worker: two
 * phases whose claim is the work — a bounded DELETE … RETURNING of rows past their retention
 * (short statements keep locks and WAL bursts small), repeated while a batch comes back full.
 */

export const OUTBOX_CLEANUP_JOB = 'outbox-cleanup';

/** The cleanup's options; each left out is OUTBOX_DEFAULTS' (defaults.ts). */
export interface OutboxCleanupSettings {
  /** Published outbox rows are kept this long. */
  outboxRetentionMs?: number;
  /** Inbox (dedupe) rows are kept this long; redeliveries older than this are not caught. */
  inboxRetentionMs?: number;
  /** Rows per DELETE statement. */
  batchSize?: number;
  /** A run starts no new DELETE after this long; the next run goes on. */
  maxRunMs?: number;
  /** Job interval. */
  intervalMs?: number;
}

export interface OutboxCleanupOptions {
  db: Db;
  settings?: OutboxCleanupSettings;
}

const cutoff = (run: BatchRun, ms: number) => new Date(run.now().getTime() - ms);

/** Deletes up to `limit` published outbox rows older than `before`; returns their ids. */
async function deletePublished(db: Db, before: Date, limit: number): Promise<{ id: string }[]> {
  const { rows } = await query<{ id: string }>(
    db,
    sql`delete from platform.outbox where id in (
          select id from platform.outbox where published_at < ${before} limit ${limit})
        returning id`,
  );
  return rows;
}

/** Deletes up to `limit` inbox rows processed before `before`; returns their keys. */
async function deleteInbox(db: Db, before: Date, limit: number): Promise<{ id: string }[]> {
  const { rows } = await query<{ id: string }>(
    db,
    sql`delete from platform.inbox where idempotency_key in (
          select idempotency_key from platform.inbox where processed_at < ${before} limit ${limit})
        returning idempotency_key as id`,
  );
  return rows;
}

export function outboxCleanupJob(opts: OutboxCleanupOptions): BatchWorker {
  const { db } = opts;
  const d = OUTBOX_DEFAULTS;
  const settings = {
    outboxRetentionMs: d.outboxRetentionMs,
    inboxRetentionMs: d.inboxRetentionMs,
    batchSize: d.outboxCleanupBatchSize,
    maxRunMs: d.outboxCleanupMaxRunMs,
    intervalMs: d.outboxCleanupIntervalMs,
    ...opts.settings,
  };
  return defineSweep({
    name: OUTBOX_CLEANUP_JOB,
    every: settings.intervalMs,
    batchSize: settings.batchSize,
    maxRunMs: settings.maxRunMs,
    steps: [
      { name: 'outbox', count: 'outboxDeleted', sweep: (limit, run) => deletePublished(db, cutoff(run, settings.outboxRetentionMs), limit) },
      { name: 'inbox', count: 'inboxDeleted', sweep: (limit, run) => deleteInbox(db, cutoff(run, settings.inboxRetentionMs), limit) },
    ],
  });
}
