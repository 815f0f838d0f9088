import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, uuid, varchar } from 'drizzle-orm/pg-core';
import { SESSION_KINDS } from '../model/call-kinds.ts';
import { REALTIME_DISPATCH_KINDS, REALTIME_OUTBOX_STATUSES, REALTIME_TARGET_KINDS } from '../model/push-kinds.ts';
import { messengerSchema, oneOf, timestamptz as ts } from '../schema.ts';

/**
 * The realtime outbox (seed 000): push intents the chats, messages, contacts and calls parts write in
 * their own transactions, for the RealtimeDispatchJob to deliver. Migrates with those parts' tables
 * (drizzle part messenger.realtime, drizzle/messenger.realtime/), after the user replica's.
 */

/**
 * RealtimeOutboxEntry: one push intent, written in the owner's transaction. Only typed reference ids
 * and enums — never a body, a name or a token (the dispatcher builds the payload at delivery).
 */
export const realtimeOutbox = messengerSchema.table(
  'realtime_outbox',
  {
    /** UUIDv7, taken after the owner's row locks, so id order is commit order per chat. */
    id: uuid('id').primaryKey(),
    kind: varchar('kind', { length: 32 }).notNull(),
    targetKind: varchar('target_kind', { length: 16 }).notNull(),
    chatId: uuid('chat_id'),
    targetUserId: uuid('target_user_id'),
    /** Logical reference to messenger.messages(id), no FK: a row outlives nothing it points at. */
    messageId: uuid('message_id'),
    refId: uuid('ref_id'),
    sessionKind: varchar('session_kind', { length: 12 }),
    seq: bigint('seq', { mode: 'number' }),
    /** The frame's payload of a carried kind (registered with the push part, platform/push/port.ts); null for every other kind. */
    payload: jsonb('payload'),
    status: varchar('status', { length: 16 }).notNull().default('Pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    /** Error class and code only, no PII. */
    lastError: varchar('last_error', { length: 512 }),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    /** Bumped by every claim, outcome and requeue: an outcome only lands on the version it claimed. */
    rowVersion: integer('row_version').notNull().default(0),
    /** W3C traceparent of the request or job that wrote the row (null: tracing off): the ops console links a Quarantined row to it. */
    traceparent: varchar('traceparent', { length: 55 }),
  },
  (t) => [
    // Retention finds Done rows through ix_rto_due, so that one keeps them.
    index('ix_rto_due').on(t.status, t.nextAttemptAt),
    // Quarantined rows with a chat only (what an operator looks up by chat): no statement of the
    // push path reads Pending rows by chat, and every entry here costs each message twice (its insert
    // and its claim, both non-HOT: the claim moves NextAttemptAt, which ix_rto_due holds).
    index('ix_rto_chat').on(t.chatId).where(sql`${t.chatId} is not null and ${t.status} = 'Quarantined'`),
    check('ck_rto_kind', oneOf(t.kind, REALTIME_DISPATCH_KINDS)),
    check('ck_rto_target_kind', oneOf(t.targetKind, REALTIME_TARGET_KINDS)),
    check('ck_rto_status', oneOf(t.status, REALTIME_OUTBOX_STATUSES)),
    check('ck_rto_session_kind', sql`${t.sessionKind} is null or ${oneOf(t.sessionKind, SESSION_KINDS)}`),
    check('ck_rto_attempts', sql`${t.attempts} >= 0`),
    check(
      'ck_rto_target',
      sql`(${t.targetKind} = 'ChatGroup' and ${t.chatId} is not null) or (${t.targetKind} = 'User' and ${t.targetUserId} is not null)`,
    ),
  ],
);
