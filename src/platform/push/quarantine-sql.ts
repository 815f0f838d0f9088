import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../db/index.ts';
import { keysetAfter, keysetOrder, type FailureCursor } from '../ops/index.ts';
import { REALTIME_OUTBOX_CHANNEL } from './outbox-sql.ts';
import type { PushRow } from './types.ts';

/**
 * The runbook's statements over Quarantined push.realtime_outbox rows: list them, and put
 * them back to Pending (one by id, or a bounded, filtered batch).
 */

/** A Quarantined row: what it points at (PushRow, without a carried payload) and why it stopped. */
export interface QuarantinedRow extends Omit<PushRow, 'payload'> {
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const QUARANTINED_COLUMNS = sql`id, kind, target_kind as "targetKind", chat_id as "chatId", target_user_id as "targetUserId", message_id as "messageId",
            ref_id as "refId", session_kind as "sessionKind", seq::float8 as seq, attempts, last_error as "lastError",
            created_at as "createdAt", updated_at as "updatedAt"`;

/** The runbook's list: Quarantined rows in id order, keyset-paged. */
export async function listQuarantined(db: Db, after: string | null, limit: number): Promise<QuarantinedRow[]> {
  const { rows } = await query<QuarantinedRow>(
    db,
    sql`select id, kind, target_kind as "targetKind", chat_id as "chatId", target_user_id as "targetUserId", message_id as "messageId",
            ref_id as "refId", session_kind as "sessionKind", seq::float8 as seq, attempts, last_error as "lastError",
            created_at as "createdAt", updated_at as "updatedAt"
       from push.realtime_outbox
      where status = 'Quarantined' and (${after}::uuid is null or id > ${after}::uuid)
      order by id limit ${limit}`,
  );
  return rows;
}

/**
 * Runbook re-enqueue of named rows: Quarantined → Pending with Attempts = 0, due now, RowVersion
 * bumped (a late outcome of an old claim cannot land on it), and the dispatcher woken. Returns how many moved.
 */
export async function requeueQuarantined(db: Db, ids: readonly string[], now: Date): Promise<number> {
  return (await requeueMatching(db, { ids }, ids.length, now, false)).requeued;
}

/** Which Quarantined rows a bulk requeue takes; every field narrows, none given = all. */
export interface QuarantineFilter {
  ids?: readonly string[];
  kind?: string;
  /** LastError starts with this text (compared as text, no pattern characters). */
  lastErrorPrefix?: string;
  /** CreatedAt >= createdFrom. */
  createdFrom?: Date;
  /** CreatedAt < createdTo (half-open, so consecutive ranges never overlap). */
  createdTo?: Date;
  /** Quarantined (UpdatedAt) in [failedFrom, failedTo): the ops console's time filter. */
  failedFrom?: Date;
  failedTo?: Date;
  /** Equal to one of the row's references (the ops console's field filter). */
  chatId?: string;
  targetUserId?: string;
  messageId?: string;
}

const quarantinedMatching = (f: QuarantineFilter): SQL =>
  sql.join(
    [
      sql`status = 'Quarantined'`,
      f.ids ? sql`id = any(${sql.param(f.ids)}::uuid[])` : undefined,
      f.kind !== undefined ? sql`kind = ${f.kind}::varchar` : undefined,
      f.lastErrorPrefix !== undefined ? sql`starts_with(last_error, ${f.lastErrorPrefix}::text)` : undefined,
      f.createdFrom ? sql`created_at >= ${f.createdFrom}::timestamptz` : undefined,
      f.createdTo ? sql`created_at < ${f.createdTo}::timestamptz` : undefined,
      f.failedFrom ? sql`updated_at >= ${f.failedFrom}::timestamptz` : undefined,
      f.failedTo ? sql`updated_at < ${f.failedTo}::timestamptz` : undefined,
      f.chatId !== undefined ? sql`chat_id = ${f.chatId}::uuid` : undefined,
      f.targetUserId !== undefined ? sql`target_user_id = ${f.targetUserId}::uuid` : undefined,
      f.messageId !== undefined ? sql`message_id = ${f.messageId}::uuid` : undefined,
    ].filter((c): c is SQL => c !== undefined),
    sql` and `,
  );

export interface RequeueResult {
  /** Quarantined rows matching the filter before the call (not capped by the limit). */
  matched: number;
  /** Rows moved back to Pending by this call: at most the limit, the oldest first; 0 on a dry run. */
  requeued: number;
}

/**
 * Runbook re-enqueue, bounded: up to `limit` Quarantined rows matching `filter`, oldest id first,
 * go back to Pending with Attempts = 0, due now, RowVersion bumped (a late outcome of an old claim
 * cannot land on them), and the dispatcher is woken. `dryRun` only counts. One statement, so the
 * count and the requeue see the same rows; concurrent calls skip each other's rows.
 */
export async function requeueMatching(db: Db, filter: QuarantineFilter, limit: number, now: Date, dryRun: boolean): Promise<RequeueResult> {
  const where = quarantinedMatching(filter);
  if (dryRun) {
    const { rows } = await query<{ n: number }>(db, sql`select count(*)::int as n from push.realtime_outbox where ${where}`);
    return { matched: rows[0]?.n ?? 0, requeued: 0 };
  }
  const at = sql`${now}::timestamptz`;
  const { rows } = await query<RequeueResult>(
    db,
    sql`with picked as (
       select id from push.realtime_outbox where ${where} order by id limit ${limit} for update skip locked),
     requeued as (
       update push.realtime_outbox o
          set status = 'Pending', attempts = 0, next_attempt_at = ${at}, row_version = o.row_version + 1, updated_at = ${at}
         from picked where o.id = picked.id
        returning 1)
     select (select count(*) from push.realtime_outbox where ${where})::int as matched,
            (select count(*) from requeued)::int as requeued, pg_notify(${REALTIME_OUTBOX_CHANNEL}, '')`,
  );
  return { matched: rows[0]?.matched ?? 0, requeued: rows[0]?.requeued ?? 0 };
}

/** A Quarantined row as the ops console lists it: with the traceparent of the work that wrote it. */
export type ListedQuarantinedRow = QuarantinedRow & { traceparent: string | null };

/** The ops console's list: Quarantined rows matching the filter, by last change then id (its pages' keyset). */
export async function listQuarantinedMatching(db: Db, filter: QuarantineFilter, limit: number, after?: FailureCursor): Promise<ListedQuarantinedRow[]> {
  const at = sql`updated_at`;
  const { rows } = await query<ListedQuarantinedRow>(
    db,
    sql`select ${QUARANTINED_COLUMNS}, traceparent from push.realtime_outbox where ${quarantinedMatching(filter)} ${keysetAfter(at, after)}
         order by ${keysetOrder(at)} limit ${limit}`,
  );
  return rows;
}

/** Discards up to `limit` Quarantined rows matching the filter (deleted: their frames are given up), oldest first. */
export async function discardQuarantined(db: Db, filter: QuarantineFilter, limit: number): Promise<number> {
  const { rowCount } = await query(
    db,
    sql`delete from push.realtime_outbox where id in (
          select id from push.realtime_outbox where ${quarantinedMatching(filter)} order by id limit ${limit} for update skip locked)`,
  );
  return rowCount;
}
