import { sql } from 'drizzle-orm';
import { query, type Db } from '../../platform/db/index.ts';
import { currentTraceparent } from '../../platform/observability/index.ts';
import { DISPATCH_WAKE_CHANNEL, type Channel } from './model.ts';
import type { ChannelConfigRow, NotificationRow } from './schema.ts';

/**
 * The SQL of notification rows (create, feed, mark-read), channel configs, push tokens and the
 * backlog gauges, one small function per statement over the `Db` the caller passes (delivery/sql.ts
 * holds the workers' statements, webhooks/ the receipts').
 */

/** Every column of a notification, as NotificationRow names it. */
const NOTIFICATION = sql`id, recipient_user_id as "recipientUserId", channel, recipient_address as "recipientAddress",
  title, body, data, status, attempts, next_attempt_at as "nextAttemptAt", last_error as "lastError",
  provider_message_id as "providerMessageId", terminal, delivery_cycle as "deliveryCycle", delivered_at as "deliveredAt",
  read_at as "readAt", version, lease_owner as "leaseOwner", lease_expires_at as "leaseExpiresAt",
  send_intent_cycle as "sendIntentCycle", send_intent_at as "sendIntentAt", send_intent_message_id as "sendIntentMessageId",
  source_key as "sourceKey", correlation_id as "correlationId", created_at as "createdAt", updated_at as "updatedAt", sent_at as "sentAt"`;

/** Every column of a channel config, as ChannelConfigRow names it. */
const CHANNEL_CONFIG = sql`channel, is_enabled as "isEnabled", provider_key as "providerKey", max_attempts as "maxAttempts",
  retry_backoff as "retryBackoff", backoff_initial_seconds as "backoffInitialSeconds",
  backoff_max_seconds as "backoffMaxSeconds", backoff_multiplier as "backoffMultiplier", version, updated_at as "updatedAt"`;

/** What the copies of one notification share; each copy (NewCopy) adds its channel and address. */
export interface NewNotificationRows {
  recipientUserId: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  correlationId: string | null;
  now: Date;
  copies: readonly NewCopy[];
}

export interface NewCopy {
  id: string;
  channel: Channel;
  recipientAddress: string | null;
  sourceKey: string | null;
}

/**
 * Inserts the copies as Pending in one statement; a source key seen before inserts nothing and is not
 * returned. Each keeps the creating request's or consumer's traceparent (null while tracing is off),
 * so the ops console links a copy that fails terminally to that trace.
 */
export async function insertNotifications(tx: Db, n: NewNotificationRows): Promise<NotificationRow[]> {
  const column = <T>(pick: (c: NewCopy) => T) => sql.param(n.copies.map(pick));
  const { rows } = await query<NotificationRow>(tx, sql`
    insert into notifications.notifications
      (id, channel, recipient_address, source_key, recipient_user_id, title, body, data, status, correlation_id, created_at, updated_at, traceparent)
    select v.id, v.channel, v.address, v.source_key, ${n.recipientUserId}::uuid, ${n.title}::varchar, ${n.body}::text,
           ${JSON.stringify(n.data)}::jsonb, 'Pending', ${n.correlationId}::varchar, ${n.now}::timestamptz, ${n.now}::timestamptz,
           ${currentTraceparent()}::varchar
      from unnest(${column((c) => c.id)}::uuid[], ${column((c) => c.channel)}::varchar[],
                  ${column((c) => c.recipientAddress)}::varchar[], ${column((c) => c.sourceKey)}::varchar[]) as v(id, channel, address, source_key)
    on conflict do nothing
    returning ${NOTIFICATION}`);
  return rows;
}

/** Wakes the dispatcher when the transaction commits. */
export async function wakeDispatcher(tx: Db): Promise<void> {
  await query(tx, sql`select pg_notify(${DISPATCH_WAKE_CHANNEL}, '')`);
}

/** The user's in-app feed, newest first; `before` is the last id of the previous page. */
export async function readFeed(db: Db, userId: string, opts: { limit: number; before?: string; unreadOnly?: boolean }): Promise<NotificationRow[]> {
  const { rows } = await query<NotificationRow>(db, sql`
    select ${NOTIFICATION} from notifications.notifications
     where recipient_user_id = ${userId} and channel = 'InApp'
       ${opts.before ? sql`and id < ${opts.before}` : sql``}
       ${opts.unreadOnly ? sql`and read_at is null` : sql``}
     order by id desc
     limit ${opts.limit}`);
  return rows;
}

/** One notification of the user (any channel). */
export async function selectOwnNotification(db: Db, userId: string, id: string): Promise<NotificationRow | undefined> {
  const { rows } = await query<NotificationRow>(db, sql`
    select ${NOTIFICATION} from notifications.notifications where id = ${id} and recipient_user_id = ${userId}`);
  return rows[0];
}

/**
 * Marks the notification read if it is unread and still has `expectedVersion` — or is one behind it
 * and not Sent yet: the notification_created frame announces the version its delivery is about to
 * record (decideMarkRead). Undefined otherwise.
 */
export async function markReadAt(db: Db, userId: string, id: string, expectedVersion: number, now: Date): Promise<NotificationRow | undefined> {
  const { rows } = await query<NotificationRow>(db, sql`
    update notifications.notifications set read_at = ${now}, updated_at = ${now}, version = version + 1
     where id = ${id} and recipient_user_id = ${userId} and read_at is null
       and (version = ${expectedVersion} or (version = ${expectedVersion} - 1 and status <> 'Sent'))
    returning ${NOTIFICATION}`);
  return rows[0];
}

/** Every channel's config (a handful of rows), or only those of `channels`. */
export async function selectChannelConfigs(db: Db, channels?: readonly string[]): Promise<ChannelConfigRow[]> {
  const only = channels === undefined ? sql`` : sql`where channel = any(${sql.param(channels)}::text[])`;
  const { rows } = await query<ChannelConfigRow>(db, sql`select ${CHANNEL_CONFIG} from notifications.channel_configs ${only}`);
  return rows;
}

export type ChannelConfigValues = Omit<ChannelConfigRow, 'channel' | 'version'>;

/** Creates the channel's config, or replaces it with the next version. */
export async function upsertChannelConfig(tx: Db, channel: Channel, v: ChannelConfigValues): Promise<ChannelConfigRow> {
  const { rows } = await query<ChannelConfigRow>(tx, sql`
    insert into notifications.channel_configs as c
      (channel, is_enabled, provider_key, max_attempts, retry_backoff, backoff_initial_seconds, backoff_max_seconds, backoff_multiplier, updated_at)
    values (${channel}, ${v.isEnabled}, ${v.providerKey}, ${v.maxAttempts}, ${v.retryBackoff}, ${v.backoffInitialSeconds},
            ${v.backoffMaxSeconds}, ${v.backoffMultiplier}, ${v.updatedAt})
    on conflict (channel) do update set
      is_enabled = excluded.is_enabled, provider_key = excluded.provider_key, max_attempts = excluded.max_attempts,
      retry_backoff = excluded.retry_backoff, backoff_initial_seconds = excluded.backoff_initial_seconds,
      backoff_max_seconds = excluded.backoff_max_seconds, backoff_multiplier = excluded.backoff_multiplier,
      updated_at = excluded.updated_at, version = c.version + 1
    returning ${CHANNEL_CONFIG}`);
  return rows[0]!;
}

export type PushPlatform = 'android' | 'ios' | 'web';

/** The user's device tokens. */
export async function pushTokensOf(tx: Db, userId: string): Promise<string[]> {
  const { rows } = await query<{ token: string }>(tx, sql`select token from notifications.push_tokens where user_id = ${userId}`);
  return rows.map((r) => r.token);
}

/** `taken`: the token belongs to another user; `limit`: the user already has `maxPerUser` tokens. */
export type PushTokenRegistration = 'registered' | 'taken' | 'limit';

/**
 * Registers a device token for the user (again: its platform and time are refreshed). A token bound
 * to another user is never moved — whoever learnt a victim's token could otherwise take their
 * notifications — so the previous user (their app at logout) must remove it first. One user's
 * registrations are serialised by a transaction-scoped advisory lock, so the cap holds under
 * concurrent calls; a token another user inserts meanwhile is not updated (the conditional upsert).
 */
export async function registerPushToken(
  db: Db,
  userId: string,
  token: string,
  platform: PushPlatform,
  now: Date,
  maxPerUser: number,
): Promise<PushTokenRegistration> {
  return db.transaction(async (tx) => {
    await query(tx, sql`select pg_advisory_xact_lock(hashtextextended(${`notifications:push-tokens:${userId}`}, 0))`);
    const { rows } = await query<{ owner: string | null; mine: number }>(
      tx,
      sql`select (select user_id from notifications.push_tokens where token = ${token}) as owner,
                 (select count(*)::int from notifications.push_tokens where user_id = ${userId}) as mine`,
    );
    const { owner, mine } = rows[0]!;
    if (owner !== null && owner !== userId) return 'taken';
    if (owner === null && mine >= maxPerUser) return 'limit';
    const { rowCount } = await query(
      tx,
      sql`insert into notifications.push_tokens (token, user_id, platform, created_at, updated_at)
          values (${token}, ${userId}, ${platform}, ${now}, ${now})
          on conflict (token) do update set platform = excluded.platform, updated_at = excluded.updated_at
           where push_tokens.user_id = excluded.user_id`,
    );
    return rowCount === 1 ? 'registered' : 'taken';
  });
}

/** Removes one of the user's tokens (logout on a device); true when it existed. */
export async function unregisterPushToken(db: Db, userId: string, token: string): Promise<boolean> {
  const { rowCount } = await query(db, sql`delete from notifications.push_tokens where token = ${token} and user_id = ${userId}`);
  return rowCount > 0;
}

/** Deletes tokens the push service called invalid, in the caller's transaction (with the notification's terminal outcome). */
export async function deletePushTokens(tx: Db, tokens: readonly string[]): Promise<number> {
  if (tokens.length === 0) return 0;
  const { rowCount } = await query(tx, sql`
    delete from notifications.push_tokens where token in (select jsonb_array_elements_text(${JSON.stringify(tokens)}::jsonb))`);
  return rowCount;
}

export interface ChannelBacklog {
  channel: Channel;
  isEnabled: boolean;
  providerKey: string;
  failedBacklog: number;
  oldestDueAgeSeconds: number;
  /** Pending plus non-terminal Failed: what waits if the channel cannot send. */
  held: number;
  oldestHeldAgeSeconds: number;
  /** Sends whose outcome is unknown (delivery/intent.ts), not in flight. */
  unconfirmed: number;
}

/** One grouped read for the gauges; only Pending and non-terminal Failed rows (partial indexes). */
export async function backlogByChannel(db: Db, now: Date): Promise<ChannelBacklog[]> {
  const unresolved = sql`n.send_intent_cycle is not distinct from n.delivery_cycle`;
  const unleased = sql`(n.lease_expires_at is null or n.lease_expires_at <= ${now})`;
  const { rows } = await query<ChannelBacklog>(db, sql`
    select c.channel, c.is_enabled as "isEnabled", c.provider_key as "providerKey",
           count(n.id) filter (where n.status = 'Failed' and not (${unresolved}))::int as "failedBacklog",
           coalesce(extract(epoch from ${now}::timestamptz - min(n.next_attempt_at) filter (
             where n.status = 'Failed' and n.next_attempt_at <= ${now} and n.attempts < c.max_attempts
               and not (${unresolved}) and ${unleased})), 0)::float8 as "oldestDueAgeSeconds",
           count(n.id) filter (where not (${unresolved}))::int as held,
           coalesce(extract(epoch from ${now}::timestamptz - min(n.created_at) filter (where not (${unresolved}))), 0)::float8 as "oldestHeldAgeSeconds",
           count(n.id) filter (where ${unresolved} and ${unleased})::int as unconfirmed
      from notifications.channel_configs c
      left join notifications.notifications n
        on n.channel = c.channel and (n.status = 'Pending' or (n.status = 'Failed' and not n.terminal))
     group by c.channel, c.is_enabled, c.provider_key`);
  return rows;
}

export interface StatusCounts {
  pending: number;
  /** Failed, waiting for a retry (not terminal). */
  failed: number;
  terminal: number;
}

/**
 * Notifications not Sent, by status: each count reads its own partial index (the dispatcher's,
 * the retry worker's, the terminal scan's), never the Sent rows, which only grow.
 */
export async function countUnsentByStatus(db: Db): Promise<StatusCounts> {
  const { rows } = await query<StatusCounts>(db, sql`
    select (select count(*) from notifications.notifications where status = 'Pending')::int as pending,
           (select count(*) from notifications.notifications where status = 'Failed' and not terminal)::int as failed,
           (select count(*) from notifications.notifications where terminal)::int as terminal`);
  return rows[0] ?? { pending: 0, failed: 0, terminal: 0 };
}
