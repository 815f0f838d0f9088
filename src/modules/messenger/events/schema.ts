import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, primaryKey, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';
import { messengerSchema, timestamptz as ts } from '../schema.ts';

/**
 * The per-user event stream (drizzle part messenger.realtime): every frame the dispatcher pushes
 * through the realtime outbox, kept longer than the outbox keeps Done rows, so a client that was
 * away resumes from its last cursor and gets every kind it missed, in order.
 */

/** Stream positions, handed out by the dispatcher in push order (never in outbox id order, which is not commit order). */
export const realtimeEventPosition = messengerSchema.sequence('realtime_event_position');

/**
 * One pushed outbox row: its references (the payload is rebuilt from them at replay, as at delivery)
 * and where it stands in the stream. A row pushed again after a failed push moves to a new position,
 * so no cursor handed out before it can skip it.
 */
export const realtimeEvents = messengerSchema.table(
  'realtime_events',
  {
    position: bigint('position', { mode: 'number' }).primaryKey(),
    outboxId: uuid('outbox_id').notNull(),
    kind: varchar('kind', { length: 32 }).notNull(),
    targetKind: varchar('target_kind', { length: 16 }).notNull(),
    chatId: uuid('chat_id'),
    targetUserId: uuid('target_user_id'),
    messageId: uuid('message_id'),
    refId: uuid('ref_id'),
    sessionKind: varchar('session_kind', { length: 12 }),
    seq: bigint('seq', { mode: 'number' }),
    /** A carried kind's frame payload, as pushed (model/push-kinds.ts); null for the others. */
    payload: jsonb('payload'),
    /** A chat event's membership version when it was pushed: who may read it is judged as at delivery. */
    membershipVersion: integer('membership_version'),
    createdAt: ts('created_at').notNull(),
    /**
     * When it took its position: what retention counts from. Not indexed: positions are handed out
     * in recording order, so retention walks the primary key from the oldest (stream-sql.ts
     * trimStream), and every pushed frame writes one index entry less.
     */
    recordedAt: ts('recorded_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_realtime_events_outbox').on(t.outboxId),
    index('ix_realtime_events_chat').on(t.chatId, t.position).where(sql`${t.targetKind} = 'ChatGroup'`),
    index('ix_realtime_events_user').on(t.targetUserId, t.position).where(sql`${t.targetKind} = 'User'`),
  ],
);

/**
 * The spans of chat membership versions a user was an Active participant in: [fromVersion,
 * toVersion), toVersion null while still a member. Written by the transaction that changes the
 * membership (under the chat row lock, with its membership_version bump), so a chat event is
 * readable by exactly the users its live push could reach — nothing before they joined, nothing
 * after they left, again after a re-add.
 */
export const chatMembershipSpans = messengerSchema.table(
  'chat_membership_spans',
  {
    chatId: uuid('chat_id').notNull(),
    userId: uuid('user_id').notNull(),
    fromVersion: integer('from_version').notNull(),
    toVersion: integer('to_version'),
  },
  (t) => [
    primaryKey({ columns: [t.chatId, t.userId, t.fromVersion] }),
    index('ix_chat_membership_spans_user').on(t.userId),
    check('ck_chat_membership_spans_versions', sql`${t.toVersion} is null or ${t.toVersion} > ${t.fromVersion}`),
  ],
);

/** One row: positions below `trimmedBelow` were deleted by retention; a cursor before it answers 410. */
export const realtimeEventHorizon = messengerSchema.table('realtime_event_horizon', {
  id: integer('id').primaryKey(),
  trimmedBelow: bigint('trimmed_below', { mode: 'number' }).notNull(),
});
