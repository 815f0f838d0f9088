import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { keysetAfter, keysetOrder, type FailureCursor } from '../../../platform/ops/index.ts';
import type { Channel } from '../model.ts';

/**
 * The reprocess call's SQL: terminal Failed notifications back into the retry cycle, each in a new
 * DeliveryCycle, in one statement (either every picked row is reopened or none is); and the ops
 * console's list and count of them, over the same filter.
 */

/** Which terminal rows to take; every field given narrows the set. The range is on the terminal failure's time (updated_at). */
export interface TerminalFilter {
  id?: string;
  ids?: readonly string[];
  channel?: Channel;
  errorCode?: string;
  failedFrom?: Date;
  failedBefore?: Date;
  recipientUserId?: string;
  correlationId?: string;
}

/** The terminal rows a filter matches (ix_notifications_terminal: terminal, in failure order). */
const terminalWhere = (f: TerminalFilter) => sql`terminal
         ${f.id === undefined ? sql`` : sql`and id = ${f.id}`}
         ${f.ids === undefined ? sql`` : sql`and id = any(${sql.param(f.ids)}::uuid[])`}
         ${f.channel === undefined ? sql`` : sql`and channel = ${f.channel}`}
         ${f.errorCode === undefined ? sql`` : sql`and last_error = ${f.errorCode}`}
         ${f.failedFrom === undefined ? sql`` : sql`and updated_at >= ${f.failedFrom}`}
         ${f.failedBefore === undefined ? sql`` : sql`and updated_at < ${f.failedBefore}`}
         ${f.recipientUserId === undefined ? sql`` : sql`and recipient_user_id = ${f.recipientUserId}`}
         ${f.correlationId === undefined ? sql`` : sql`and correlation_id = ${f.correlationId}`}`;

export interface TerminalRow {
  id: string;
  channel: Channel;
  recipientUserId: string;
  correlationId: string | null;
  lastError: string | null;
  deliveryCycle: number;
  attempts: number;
  createdAt: Date;
  /** When it failed terminally. */
  failedAt: Date;
  /** The creating request's or consumer's traceparent (null: created with tracing off). */
  traceparent: string | null;
}

/** Terminal rows matching the filter, oldest failure first (the order the reopen takes them in). */
export async function listTerminal(db: Db, f: TerminalFilter, limit: number, after?: FailureCursor): Promise<TerminalRow[]> {
  const { rows } = await query<TerminalRow>(db, sql`
    select id, channel, recipient_user_id as "recipientUserId", correlation_id as "correlationId", last_error as "lastError",
           delivery_cycle as "deliveryCycle", attempts, created_at as "createdAt", updated_at as "failedAt", traceparent
      from notifications.notifications
     where ${terminalWhere(f)} ${keysetAfter(sql`updated_at`, after)}
     order by ${keysetOrder(sql`updated_at`)}
     limit ${limit}`);
  return rows;
}

export async function countTerminal(db: Db, f: TerminalFilter): Promise<number> {
  const { rows } = await query<{ n: number }>(db, sql`select count(*)::int as n from notifications.notifications where ${terminalWhere(f)}`);
  return rows[0]?.n ?? 0;
}

export interface Reprocessed {
  id: string;
  channel: Channel;
  /** The new cycle: its Idempotency-Key / Message-ID differ from the failed one's, so providers send again. */
  deliveryCycle: number;
  lastError: string | null;
  /** For the NotificationStatusChanged frame of the reopen. */
  recipientUserId: string;
  version: number;
  readAt: Date | null;
}

/**
 * Up to `limit` terminal rows matching the filter, oldest failure first, become Failed, not terminal,
 * in DeliveryCycle + 1 with Attempts 0 and due now: the retry worker's next run sends them with the
 * channel's full MaxAttempts. LastError stays until that send. Rows locked by a concurrent writer (a
 * webhook) are skipped, not waited for.
 */
export async function reopenTerminal(tx: Db, f: TerminalFilter, limit: number, now: Date): Promise<Reprocessed[]> {
  const { rows } = await query<Reprocessed>(tx, sql`
    with picked as (
      select id from notifications.notifications
       where ${terminalWhere(f)}
       order by updated_at, id
       limit ${limit}
       for update skip locked)
    update notifications.notifications n
       set terminal = false, delivery_cycle = n.delivery_cycle + 1, attempts = 0, next_attempt_at = ${now},
           provider_message_id = null, delivered_at = null, lease_owner = null, lease_expires_at = null,
           send_intent_cycle = null, send_intent_at = null, send_intent_message_id = null,
           updated_at = ${now}, version = n.version + 1
      from picked where n.id = picked.id
    returning n.id, n.channel, n.delivery_cycle as "deliveryCycle", n.last_error as "lastError",
              n.recipient_user_id as "recipientUserId", n.version, n.read_at as "readAt"`);
  return rows;
}

/** Whether a notification exists at all (for the 404 / 409 of the one-by-id call). */
export async function notificationExists(db: Db, id: string): Promise<boolean> {
  const { rowCount } = await query(db, sql`select 1 from notifications.notifications where id = ${id}`);
  return rowCount > 0;
}
