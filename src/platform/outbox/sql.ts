import type pg from 'pg';
import type { Queryable } from '../db/index.ts';

/** Raw SQL of the outbox publisher and cleanup; each function runs one statement on the client given. */

/** The publisher needs a pool: marks run in a short transaction of their own. */
export type OutboxPool = Pick<pg.Pool, 'query' | 'connect'>;

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
  /** created_at in epoch milliseconds, for the publish lag metric. */
  createdAtMs: number;
}

/** Smallest UUID: the cursor before the first row. */
export const FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * The next unpublished rows after `afterId`, in id order. No lock is taken and no transaction
 * stays open: the send happens after this returns. The publisher is a single runner, so no one
 * else sends these rows concurrently.
 */
export async function selectPendingAfter(db: Queryable, afterId: string, limit: number): Promise<PendingRow[]> {
  const res = await db.query<PendingRow>(
    `select id, topic, key, event_type as "eventType", contract_version as "contractVersion",
            aggregate_type as "aggregateType", aggregate_id as "aggregateId",
            to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "occurredAt",
            correlation_id as "correlationId", payload::text as payload,
            (extract(epoch from created_at) * 1000)::float8 as "createdAtMs"
       from platform.outbox
      where published_at is null and id > $1
      order by id
      limit $2`,
    [afterId, limit],
  );
  return res.rows;
}

/**
 * Marks sent rows published. The commit does not wait for the WAL flush (synchronous_commit off
 * for this transaction only): losing the last marks in a server crash only means those rows are
 * sent again, which at-least-once delivery allows, and the publisher's next run does not wait
 * behind a disk flush.
 */
export async function markPublished(pool: OutboxPool, ids: readonly string[], at: Date): Promise<number> {
  if (ids.length === 0) return 0;
  const client = await pool.connect();
  try {
    await client.query('begin; set local synchronous_commit = off');
    const res = await client.query(
      `update platform.outbox set published_at = $2 where id = any($1::uuid[]) and published_at is null`,
      [ids, at],
    );
    await client.query('commit');
    return res.rowCount ?? 0;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Counts a failed send on the rows; `error` must already be free of payload data. */
export async function recordPublishFailure(db: Queryable, ids: readonly string[], error: string): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `update platform.outbox set attempts = attempts + 1, last_error = left($2, 512) where id = any($1::uuid[])`,
    [ids, error],
  );
}

/** Highest count the pending gauge reports: a scrape never scans more of a huge backlog than this. */
export const PENDING_COUNT_CAP = 1_000_000;

/**
 * For the gauges: rows waiting (capped at PENDING_COUNT_CAP), and the age of the oldest (database
 * clock). Both walk the pending partial index; the oldest is the smallest pending id (UUIDv7 ids
 * are time-ordered), not a min() over every pending row, so a scrape stays cheap after an outage.
 */
export async function pendingStats(db: Queryable, cap = PENDING_COUNT_CAP): Promise<{ pending: number; oldestAgeSeconds: number }> {
  const res = await db.query<{ pending: number; oldest: number | null }>(
    `select (select count(*)::int from (select 1 from platform.outbox where published_at is null limit $1) capped) as pending,
            (select extract(epoch from now() - created_at)::float8 from platform.outbox
              where published_at is null order by id limit 1) as oldest`,
    [cap],
  );
  const row = res.rows[0];
  return { pending: row?.pending ?? 0, oldestAgeSeconds: Math.max(0, row?.oldest ?? 0) };
}
