import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../../platform/db/index.ts';
import { currentTraceparent } from '../../platform/observability/index.ts';
import { newId } from '../../platform/time.ts';
import { DISPATCH_WAKE_CHANNEL, type Channel } from './model.ts';

/**
 * A message's notifications (the offline path, message-posted.consumer.ts), per chat and recipient
 * (notifications.chat_notices): a chat notifies a recipient once per window, and a member for whom
 * it is a message request once until they accept. One read picks who may be notified (then only
 * they are looked up on the hub), one set-based statement writes every row of the message.
 */

/** A recipient of a message as its MessagePostedKafkaEvent names it. */
export interface NoticeRecipient {
  userId: string;
  /** The chat is a message request to them (not accepted: docs/security.md, "Consent"). */
  request: boolean;
}

/** The chat and the message's time, which the window counts from. */
export interface NoticeScope {
  chatId: string;
  sentAt: Date;
  /** NOTIFICATIONS_CHAT_COLLAPSE_WINDOW; 0: every message notifies (a request member still once). */
  windowMs: number;
}

/**
 * Whether the chat may notify the recipient again over the notice `n` it already has: never while
 * the chat is a message request to them (`r.request`), else once the window has passed since that
 * notice's message or its in-app copy was read (reading it asks for the next one). The one rule the
 * read and the write share, so a notice written meanwhile by another replica is judged the same.
 * The read mark is a scalar subquery: one primary-key probe per notice (an EXISTS is planned as a
 * hashed scan of every read notification).
 */
function mayNotifyAgain(r: SQL, n: SQL, s: NoticeScope): SQL {
  return sql`(not ${r}.request and (${n}.notified_at <= ${s.sentAt}::timestamptz - make_interval(secs => ${s.windowMs / 1000})
    or (select x.read_at from notifications.notifications x where x.id = ${n}.notification_id) is not null))`;
}

/** A recipient the rules let notify now, with their devices (one Push copy each). */
export interface NoticeCandidate extends NoticeRecipient {
  tokens: string[];
}

/** The recipients the chat may notify now, in input order, with their push tokens (a read, no lock). */
export async function noticeCandidates(db: Db, scope: NoticeScope, recipients: readonly NoticeRecipient[]): Promise<NoticeCandidate[]> {
  if (recipients.length === 0) return [];
  const { rows } = await query<NoticeCandidate>(db, sql`
    select r.user_id as "userId", r.request,
           coalesce((select array_agg(t.token order by t.token) from notifications.push_tokens t where t.user_id = r.user_id), '{}') as tokens
      from unnest(${sql.param(recipients.map((x) => x.userId))}::uuid[], ${sql.param(recipients.map((x) => x.request))}::boolean[])
           with ordinality as r(user_id, request, ord)
      left join notifications.chat_notices n on n.recipient_user_id = r.user_id and n.chat_id = ${scope.chatId}
     where n.recipient_user_id is null or ${mayNotifyAgain(sql`r`, sql`n`, scope)}
     order by r.ord`);
  return rows;
}

/** What every copy of the message's notifications shares. */
export interface MessageNotice {
  title: string;
  data: Record<string, unknown>;
  correlationId: string | null;
  /** Dedupe prefix per recipient: `${sourcePrefix}:${userId}:InApp`, `…:Push:${i}`. */
  sourcePrefix: string;
  now: Date;
}

/** Rows written per channel, with the channel's config as the statement read it (null: no config row). */
export interface WrittenChannel {
  channel: Channel;
  rows: number;
  isEnabled: boolean | null;
  providerKey: string | null;
}

/**
 * Writes the message's notifications for `recipients` in ONE statement: each recipient's chat
 * notice is upserted only where the rules still allow it (mayNotifyAgain, judged on the row as it
 * is now), and only those recipients get their in-app copy plus one Push copy per device, Pending,
 * deduped by source key; the dispatcher is woken at commit. Answers the rows written per channel.
 */
export async function writeMessageNotices(tx: Db, scope: NoticeScope, notice: MessageNotice, recipients: readonly NoticeCandidate[]): Promise<WrittenChannel[]> {
  if (recipients.length === 0) return [];
  const copies: { id: string; userId: string; channel: Channel; address: string | null; sourceKey: string }[] = [];
  const inAppIds = recipients.map((r) => {
    const id = newId();
    copies.push({ id, userId: r.userId, channel: 'InApp', address: null, sourceKey: `${notice.sourcePrefix}:${r.userId}:InApp` });
    r.tokens.forEach((token, i) =>
      copies.push({ id: newId(), userId: r.userId, channel: 'Push', address: token, sourceKey: `${notice.sourcePrefix}:${r.userId}:Push:${i}` }),
    );
    return id;
  });
  const column = <T>(values: T[], type: string) => sql`${sql.param(values)}::${sql.raw(type)}[]`;
  const { rows } = await query<WrittenChannel>(tx, sql`
    with input as (
      select * from unnest(${column(recipients.map((r) => r.userId), 'uuid')}, ${column(recipients.map((r) => r.request), 'boolean')},
                           ${column(inAppIds, 'uuid')}) as r(user_id, request, notification_id)),
    noticed as (
      insert into notifications.chat_notices as n (recipient_user_id, chat_id, notification_id, notified_at, request)
      select r.user_id, ${scope.chatId}, r.notification_id, ${scope.sentAt}, r.request from input r
      on conflict (chat_id, recipient_user_id) do update
         set notification_id = excluded.notification_id, notified_at = excluded.notified_at, request = excluded.request
       where ${mayNotifyAgain(sql`excluded`, sql`n`, scope)}
      returning n.recipient_user_id),
    inserted as (
      insert into notifications.notifications
        (id, channel, recipient_address, source_key, recipient_user_id, title, body, data, status, correlation_id, created_at, updated_at, traceparent)
      select c.id, c.channel, c.address, c.source_key, c.user_id, ${notice.title}::varchar, '', ${JSON.stringify(notice.data)}::jsonb, 'Pending',
             ${notice.correlationId}::varchar, ${notice.now}::timestamptz, ${notice.now}::timestamptz, ${currentTraceparent()}::varchar
        from unnest(${column(copies.map((c) => c.id), 'uuid')}, ${column(copies.map((c) => c.userId), 'uuid')},
                    ${column(copies.map((c) => c.channel), 'varchar')}, ${column(copies.map((c) => c.address), 'varchar')},
                    ${column(copies.map((c) => c.sourceKey), 'varchar')}) as c(id, user_id, channel, address, source_key)
       where c.user_id in (select recipient_user_id from noticed)
      on conflict do nothing
      returning channel),
    woke as (select pg_notify(${DISPATCH_WAKE_CHANNEL}, '') as v where exists (select 1 from inserted))
    select i.channel, count(*)::int as rows, cc.is_enabled as "isEnabled", cc.provider_key as "providerKey",
           (select count(*) from woke)::int as woke
      from inserted i left join notifications.channel_configs cc on cc.channel = i.channel
     group by i.channel, cc.is_enabled, cc.provider_key`);
  return rows.map(({ channel, rows: n, isEnabled, providerKey }) => ({ channel, rows: n, isEnabled, providerKey }));
}

/**
 * Deletes up to `limit` notices notified before `before` (notifications-cleanup, cleanup.job.ts;
 * ix_chat_notices_lapsed serves the pick); returns their keys. Such a notice no longer folds a
 * message sent after `before` + window (mayNotifyAgain lets the chat notify, as no row does), so
 * it carries nothing — except a message request's: that one keeps the member at one notification
 * until they accept (a missing row would notify them again), so `request` rows are never swept.
 * The rows are locked as they are picked and skipped when held; FOR UPDATE re-reads a row a later
 * message renewed since the statement began, so a renewed notice is never deleted.
 */
export async function deleteLapsedNotices(db: Db, before: Date, limit: number): Promise<{ id: string }[]> {
  const { rows } = await query<{ id: string }>(db, sql`
    delete from notifications.chat_notices n
     using (select chat_id, recipient_user_id from notifications.chat_notices
             where not request and notified_at < ${before.toISOString()}::timestamptz
             limit ${limit}
             for update skip locked) lapsed
     where n.chat_id = lapsed.chat_id and n.recipient_user_id = lapsed.recipient_user_id
    returning n.chat_id || ':' || n.recipient_user_id as id`);
  return rows;
}
