import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { defineSweep, type BatchRun, type BatchWorker } from '../jobs/index.ts';

/**
 * Retention of the integration outbox and the consumers' inbox, on the kernel's batch worker: two
 * phases whose claim is the work — a bounded DELETE … RETURNING of rows past their retention
 * (short statements keep locks and WAL bursts small), repeated while a batch comes back full.
 */

export const OUTBOX_CLEANUP_JOB = 'outbox-cleanup';

/**
 * How long rows are kept (once settings; nobody tuned them).
 * A published outbox row is kept a day for a replay or a look after an incident; an inbox (dedupe)
 * row a week, Kafka's default retention, so a redelivery the broker can still make is caught.
 */
export const CLEANUP_RETENTION = { outboxRetentionHours: 24, inboxRetentionDays: 7 } as const;

export interface OutboxCleanupSettings {
  /** Published outbox rows are kept this long (CLEANUP_RETENTION.outboxRetentionHours). */
  outboxRetentionHours: number;
  /** Inbox (dedupe) rows are kept this long (CLEANUP_RETENTION.inboxRetentionDays); redeliveries older than this are not caught. */
  inboxRetentionDays: number;
  /** Rows per DELETE statement (OUTBOX_CLEANUP_DEFAULTS when unset). */
  batchSize?: number;
  /** A run starts no new DELETE after this long; the next run goes on. */
  maxRunMs?: number;
  /** Job interval. */
  intervalMs?: number;
}

export interface OutboxCleanupOptions {
  db: Db;
  settings: OutboxCleanupSettings;
}

const HOUR = 3_600_000;

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

/** The cleanup's options when unset (OutboxCleanupSettings). */
export const OUTBOX_CLEANUP_DEFAULTS = { batchSize: 1000, maxRunMs: 5 * 60_000, intervalMs: 10 * 60_000 } as const;

export function outboxCleanupJob(opts: OutboxCleanupOptions): BatchWorker {
  const { db } = opts;
  const settings = { ...OUTBOX_CLEANUP_DEFAULTS, ...opts.settings };
  return defineSweep({
    name: OUTBOX_CLEANUP_JOB,
    every: settings.intervalMs,
    batchSize: settings.batchSize,
    maxRunMs: settings.maxRunMs,
    steps: [
      { name: 'outbox', count: 'outboxDeleted', sweep: (limit, run) => deletePublished(db, cutoff(run, settings.outboxRetentionHours * HOUR), limit) },
      { name: 'inbox', count: 'inboxDeleted', sweep: (limit, run) => deleteInbox(db, cutoff(run, settings.inboxRetentionDays * 24 * HOUR), limit) },
    ],
  });
}
