import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  char,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgSchema,
  text,
  timestamp,
  primaryKey,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';

export const notificationsSchema = pgSchema('notifications');

const tz = { withTimezone: true } as const;

/**
 * NotificationEntity: one recipient on one channel. The in-app copy is a row of its own (channel
 * InApp), so an external channel's failure never touches it (AC5).
 *
 * Status Pending → Sent | Failed; Failed → Sent | Failed (retry) until Attempts reaches MaxAttempts
 * or a non-retriable error makes it terminal (INV-NTF-7). Sent is final except for an authenticated
 * failed-delivery webhook, which reopens it as Failed in a new DeliveryCycle (docs/architecture.md, "Decisions", 004).
 * Every domain mutation bumps `version` (optimistic concurrency, A5); the lease columns are not domain
 * state: they keep a claimed row away from other workers while its provider call is in flight.
 */
export const notifications = notificationsSchema.table(
  'notifications',
  {
    id: uuid('id').primaryKey(), // NotificationId, UUIDv7; also the provider's client reference
    recipientUserId: uuid('recipient_user_id').notNull(),
    channel: varchar('channel', { length: 16 }).notNull(),
    /** Email address, phone number or push token; null for InApp. Never logged. */
    recipientAddress: varchar('recipient_address', { length: 4096 }),
    title: varchar('title', { length: 200 }).notNull(),
    body: text('body').notNull().default(''),
    data: jsonb('data').notNull().default({}),
    status: varchar('status', { length: 10 }).notNull().default('Pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', tz),
    lastError: varchar('last_error', { length: 64 }),
    providerMessageId: varchar('provider_message_id', { length: 255 }),
    terminal: boolean('terminal').notNull().default(false),
    deliveryCycle: integer('delivery_cycle').notNull().default(1),
    deliveredAt: timestamp('delivered_at', tz),
    readAt: timestamp('read_at', tz),
    version: integer('version').notNull().default(1),
    leaseOwner: uuid('lease_owner'),
    leaseExpiresAt: timestamp('lease_expires_at', tz),
    /**
     * The send intent of a provider that cannot dedupe a resend (SMTP): written in its own
     * transaction just before the call, cleared with an outcome that settles the send. An intent of
     * the current DeliveryCycle left behind means the message may or may not have gone out (the worker
     * died, or the server's answer to the message was lost): the row is never claimed again; a
     * delivery webhook or the admin resolve call settles it (delivery/intent.ts). Not domain state,
     * like the lease.
     */
    sendIntentCycle: integer('send_intent_cycle'),
    sendIntentAt: timestamp('send_intent_at', tz),
    sendIntentMessageId: varchar('send_intent_message_id', { length: 255 }),
    /** Dedupe key of rows created from an event (e.g. one per message, recipient and channel). */
    sourceKey: varchar('source_key', { length: 300 }),
    correlationId: varchar('correlation_id', { length: 100 }),
    /** W3C traceparent of the request or consumer that created the row (null: tracing off): the ops console links a terminal failure to it. */
    traceparent: varchar('traceparent', { length: 55 }),
    createdAt: timestamp('created_at', tz).notNull(),
    updatedAt: timestamp('updated_at', tz).notNull(),
    sentAt: timestamp('sent_at', tz),
  },
  (t) => [
    check('ck_notifications_status', sql`${t.status} in ('Pending', 'Sent', 'Failed')`),
    check(
      'ck_notifications_channel',
      sql`${t.channel} in ('InApp', 'Email', 'Sms', 'Push', 'Telegram', 'Max', 'WhatsApp', 'Viber')`,
    ),
    check('ck_notifications_attempts', sql`${t.attempts} >= 0`),
    check('ck_notifications_delivery_cycle', sql`${t.deliveryCycle} >= 1`),
    check('ck_notifications_terminal_is_failed', sql`not ${t.terminal} or ${t.status} = 'Failed'`),
    check('ck_notifications_sent_has_provider_id', sql`${t.status} <> 'Sent' or ${t.providerMessageId} is not null`),
    // The retry worker's claim: due, non-terminal Failed rows in NextAttemptAt order.
    index('ix_notifications_due_failed').on(t.nextAttemptAt).where(sql`${t.status} = 'Failed' and not ${t.terminal}`),
    // The dispatcher's claim: Pending rows in creation (id) order.
    index('ix_notifications_pending').on(t.id).where(sql`${t.status} = 'Pending'`),
    // The reprocess call's scan (terminal-failures/): terminal rows in the order they failed.
    index('ix_notifications_terminal').on(t.updatedAt, t.id).where(sql`${t.terminal}`),
    // The in-app feed, newest first.
    index('ix_notifications_feed').on(t.recipientUserId, t.id.desc()).where(sql`${t.channel} = 'InApp'`),
    uniqueIndex('ux_notifications_source_key').on(t.sourceKey).where(sql`${t.sourceKey} is not null`),
  ],
);

/** ChannelConfig: whether a channel is on, which adapter serves it and how it retries. */
export const channelConfigs = notificationsSchema.table(
  'channel_configs',
  {
    channel: varchar('channel', { length: 16 }).primaryKey(),
    isEnabled: boolean('is_enabled').notNull(),
    providerKey: varchar('provider_key', { length: 50 }).notNull(),
    maxAttempts: integer('max_attempts').notNull(),
    retryBackoff: varchar('retry_backoff', { length: 12 }).notNull(),
    /** Fixed: the delay; Exponential: the first delay. */
    backoffInitialSeconds: integer('backoff_initial_seconds').notNull(),
    backoffMaxSeconds: integer('backoff_max_seconds').notNull(),
    backoffMultiplier: doublePrecision('backoff_multiplier').notNull().default(2),
    version: integer('version').notNull().default(1),
    updatedAt: timestamp('updated_at', tz).notNull().defaultNow(),
  },
  (t) => [
    check('ck_channel_configs_backoff', sql`${t.retryBackoff} in ('Fixed', 'Exponential')`),
    check('ck_channel_configs_max_attempts', sql`${t.maxAttempts} between 1 and 100`),
    check('ck_channel_configs_initial', sql`${t.backoffInitialSeconds} >= 1`),
    check('ck_channel_configs_max', sql`${t.backoffMaxSeconds} >= ${t.backoffInitialSeconds}`),
    check('ck_channel_configs_multiplier', sql`${t.backoffMultiplier} >= 1 and ${t.backoffMultiplier} <= 10`),
  ],
);

/** Push tokens per user (FCM style); a token the push service calls invalid is deleted. */
export const pushTokens = notificationsSchema.table(
  'push_tokens',
  {
    token: varchar('token', { length: 4096 }).primaryKey(),
    userId: uuid('user_id').notNull(),
    platform: varchar('platform', { length: 16 }).notNull(),
    createdAt: timestamp('created_at', tz).notNull(),
    updatedAt: timestamp('updated_at', tz).notNull(),
  },
  (t) => [
    index('ix_push_tokens_user').on(t.userId),
    check('ck_push_tokens_platform', sql`${t.platform} in ('android', 'ios', 'web')`),
  ],
);

/**
 * Delivery-webhook signatures already applied, kept while their timestamp is inside the signature
 * window (then the signature check refuses them as stale and the row is deleted by
 * `notifications-cleanup`). Written with ON CONFLICT DO NOTHING in the transaction of
 * the receipt's effect, so a receipt takes effect once across every replica (NTF_WEBHOOK_REPLAYED).
 */
export const webhookReplays = notificationsSchema.table(
  'webhook_replays',
  {
    provider: varchar('provider', { length: 50 }).notNull(),
    /** Hex SHA-256 of the lower-cased `X-Signature` value (the HMAC of timestamp and raw body). */
    signatureHash: char('signature_hash', { length: 64 }).notNull(),
    expiresAt: timestamp('expires_at', tz).notNull(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.signatureHash] }), index('ix_webhook_replays_expires').on(t.expiresAt)],
);

/**
 * The last message notification of a chat to a recipient (the offline path, message-posted.consumer.ts):
 * what the chat's later messages are folded into. A recipient gets a new one only once the window
 * (NOTIFICATIONS_CHAT_COLLAPSE_WINDOW) has passed since `notifiedAt` or its in-app copy was read; a
 * member for whom the chat is a message request (`request`) gets none while this row exists. One row
 * per recipient and chat, replaced in place: it never grows with the messages; notifications-cleanup
 * deletes it a day past its window (NOTIFICATIONS_DEFAULTS.chatNoticeLagAllowanceMs), a request's never.
 */
export const chatNotices = notificationsSchema.table(
  'chat_notices',
  {
    recipientUserId: uuid('recipient_user_id').notNull(),
    chatId: uuid('chat_id').notNull(),
    /** The in-app copy of the notification the chat's later messages are folded into. */
    notificationId: uuid('notification_id').notNull(),
    /** SentAt of the message that notified: the window counts from the messages' own time, not from when a backlog was read. */
    notifiedAt: timestamp('notified_at', tz).notNull(),
    /** The chat was a message request to the recipient when they were notified. */
    request: boolean('request').notNull(),
  },
  (t) => [
    // Chat first: a message reads the notices of its chat, all of its recipients at once.
    primaryKey({ columns: [t.chatId, t.recipientUserId] }),
    // The cleanup's pick of lapsed notices (deleteLapsedNotices); a request's notice is never swept.
    index('ix_chat_notices_lapsed').on(t.notifiedAt).where(sql`not ${t.request}`),
  ],
);

/** A notification as the API and workers read it; its traceparent is read by the ops console's list only. */
export type NotificationRow = Omit<typeof notifications.$inferSelect, 'traceparent'>;
export type ChannelConfigRow = typeof channelConfigs.$inferSelect;
