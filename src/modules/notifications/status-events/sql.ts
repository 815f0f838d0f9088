import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { STATUS_EVENTS_WAKE_CHANNEL } from '../model.ts';

/** The status-event outbox's SQL (notifications.status_events), one function per statement. */

export interface StatusEventRow {
  id: number;
  recipientUserId: string;
  /** The NotificationStatusChangedFrame (changes.ts) as stored; handed to the hub as is. */
  frame: Record<string, unknown>;
}

/** Stores frames in the caller's transaction, in the given order, and wakes the drain job when it commits. */
export async function insertStatusEvents(
  tx: Db,
  events: readonly { recipientUserId: string; notificationId: string; frame: object }[],
  now: Date,
): Promise<void> {
  const column = <T>(pick: (e: (typeof events)[number]) => T) => sql.param(events.map(pick));
  await query(tx, sql`
    insert into notifications.status_events (recipient_user_id, notification_id, frame, created_at)
    select v.recipient, v.notification, v.frame, ${now.toISOString()}::timestamptz
      from unnest(${column((e) => e.recipientUserId)}::uuid[], ${column((e) => e.notificationId)}::uuid[],
                  ${column((e) => JSON.stringify(e.frame))}::jsonb[]) with ordinality as v(recipient, notification, frame, n)
     order by v.n`);
  await query(tx, sql`select pg_notify(${STATUS_EVENTS_WAKE_CHANNEL}, '')`);
}

/** The oldest frames first (ids follow commit order closely enough for one user's changes, which are serialised by the row lock). */
export async function oldestStatusEvents(db: Db, limit: number, exclude: readonly string[]): Promise<StatusEventRow[]> {
  const { rows } = await query<StatusEventRow>(db, sql`
    select id::int8 as id, recipient_user_id as "recipientUserId", frame from notifications.status_events
     ${exclude.length === 0 ? sql`` : sql`where id <> all(${sql.param(exclude.map(Number))}::int8[])`}
     order by id
     limit ${limit}`);
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/** Forgets frames the hub took. */
export async function deleteStatusEvents(db: Db, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await query(db, sql`delete from notifications.status_events where id = any(${sql.param(ids)}::int8[])`);
}

/** Frames not yet handed to the hub, and the age of the oldest (for the gauge). */
export async function statusEventBacklog(db: Db, now: Date): Promise<{ pending: number; oldestAgeSeconds: number }> {
  const { rows } = await query<{ pending: number; oldestAgeSeconds: number }>(db, sql`
    select count(*)::int as pending,
           coalesce(extract(epoch from ${now.toISOString()}::timestamptz - min(created_at)), 0)::float8 as "oldestAgeSeconds"
      from notifications.status_events`);
  return rows[0]!;
}
