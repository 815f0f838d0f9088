import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { fenceLost, leaseHolds, type Fence } from '../jobs/lease-sql.ts';
import { OUTBOX_DEFAULTS } from './defaults.ts';

/** The SQL of the outbox publisher and its gauges; each function runs one statement on the `Db` given. */

export interface PendingRow {
  id: string;
  topic: string;
  key: string;
  eventType: string;
  contractVersion: number;
  aggregateType: string;
  aggregateId: string;
  /** ISO-8601 UTC with milliseconds, formatted by the database (no Date parsing per row). */
  occurredAt: string;
  correlationId: string | null;
  /** jsonb as text: sent as the message value without a parse/serialise round trip. */
  payload: string;
  /** The writer's W3C traceparent (null: written with tracing off), continued by the send. */
  traceparent: string | null;
  /** created_at in epoch milliseconds, for the publish lag metric. */
  createdAtMs: number;
}

/** Smallest UUID: the cursor before the first row. */
export const FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * The next unpublished rows after `afterId`, in id order. No lock is taken and no transaction
 * stays open: the send happens after this returns. The publisher is a single runner, so no one
 * else sends these rows concurrently. The read is the database function outbox_pending_after
 * (platform migration 0003), which pins a plain index scan: the one plan that leaves the entries
 * of published rows marked dead for the next pass to skip.
 */
export async function selectPendingAfter(db: Db, afterId: string, limit: number): Promise<PendingRow[]> {
  const { rows } = await query<PendingRow>(db, sql`select * from platform.outbox_pending_after(${afterId}::uuid, ${limit}::int)`, {
    name: 'platform_outbox_pending_after',
  });
  return rows;
}

/**
 * Marks sent rows published. The commit does not wait for the WAL flush (synchronous_commit off
 * for this statement's own transaction only, as set_config's is_local; the pooled connection keeps
 * its setting): losing the last marks in a server crash only means those rows are sent again, which
 * at-least-once delivery allows, and the publisher's next run does not wait behind a disk flush.
 *
 * With the run's `fence`, the mark is written only while the publisher's lease still has that token
 * (checked in this statement): a publisher that froze and was taken over must not mark rows as its
 * own progress once the new holder publishes. A refused mark throws LeaseLostError.
 */
export async function markPublished(db: Db, ids: readonly string[], at: Date, fence?: Fence): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await query(
    db,
    sql`update platform.outbox set published_at = ${at}
          from (select set_config('synchronous_commit', 'off', true)) as async_commit
         where id = any(${sql.param(ids)}::uuid[]) and published_at is null and ${leaseHolds(fence)}`,
  );
  // Nothing marked: the rows were marked already, or the fence refused. Tokens only grow, so a
  // fence that holds now held during the update too.
  if (rowCount === 0 && fence) await assertLeaseHolds(db, fence, 'outbox mark');
  return rowCount;
}

/** Throws LeaseLostError (naming `what`) unless the publisher's lease still has the token of `fence`. */
export async function assertLeaseHolds(db: Db, fence: Fence, what: string): Promise<void> {
  const { rows } = await query<{ holds: boolean }>(db, sql`select ${leaseHolds(fence)} as holds`);
  if (rows[0]?.holds !== true) throw fenceLost(fence, what);
}

/** Counts a failed send on the rows, unless `fence` says the run was taken over; `error` must already be free of payload data. */
export async function recordPublishFailure(db: Db, ids: readonly string[], error: string, fence?: Fence): Promise<void> {
  if (ids.length === 0) return;
  await query(
    db,
    sql`update platform.outbox set attempts = attempts + 1, last_error = left(${error}, 512)
         where id = any(${sql.param(ids)}::uuid[]) and ${leaseHolds(fence)}`,
  );
}

/**
 * For the gauges: rows waiting (capped at OUTBOX_DEFAULTS.outboxPendingCountCap: a scrape never scans more of a huge backlog), and the age of the oldest (database
 * clock). Both walk the pending partial index; the oldest is the smallest pending id (UUIDv7 ids
 * are time-ordered), not a min() over every pending row, so a scrape stays cheap after an outage.
 */
export async function pendingStats(db: Db, cap = OUTBOX_DEFAULTS.outboxPendingCountCap): Promise<{ pending: number; oldestAgeSeconds: number }> {
  const { rows } = await query<{ pending: number; oldest: number | null }>(
    db,
    sql`select (select count(*)::int from (select 1 from platform.outbox where published_at is null limit ${cap}) capped) as pending,
               (select extract(epoch from now() - created_at)::float8 from platform.outbox
                 where published_at is null order by id limit 1) as oldest`,
  );
  const row = rows[0];
  return { pending: row?.pending ?? 0, oldestAgeSeconds: Math.max(0, row?.oldest ?? 0) };
}
