import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';
import { CHAT_EVENT_KINDS, CHAT_KINDS, NOTIFICATION_LEVELS, PARTICIPANT_ROLES, PARTICIPANT_STATUSES } from '../model/chat-kinds.ts';
import { messengerSchema, oneOf, timestamptz as ts } from '../schema.ts';

/** Chats, their participants and system feed (seed 000; drizzle part messenger.realtime). */

/** A direct (two people) or group chat. LastSeq hands out the gapless per-chat message Seq. */
export const chats = messengerSchema.table(
  'chats',
  {
    id: uuid('id').primaryKey(),
    kind: varchar('kind', { length: 8 }).notNull(),
    title: varchar('title', { length: 200 }),
    /** Direct chats only: "<smaller user id>:<larger user id>", so a pair has one direct chat. */
    directKey: varchar('direct_key', { length: 73 }),
    createdByUserId: uuid('created_by_user_id').notNull(),
    lastSeq: bigint('last_seq', { mode: 'number' }).notNull().default(0),
    /**
     * Bumped by every membership change (under the chat row lock): a one-statement send whose
     * snapshot predates a membership change it then waited for finds it changed and reads again.
     */
    membershipVersion: integer('membership_version').notNull().default(0),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_chats_direct_key').on(t.directKey),
    check('ck_chats_kind', oneOf(t.kind, CHAT_KINDS)),
    check('ck_chats_direct_key', sql`(${t.kind} = 'Direct') = (${t.directKey} is not null)`),
    check('ck_chats_last_seq', sql`${t.lastSeq} >= 0`),
  ],
);

/** Participant (participant.md): only Active participants see the chat and are in chat:{ChatId}. */
export const chatParticipants = messengerSchema.table(
  'chat_participants',
  {
    id: uuid('id').primaryKey(),
    chatId: uuid('chat_id')
      .notNull()
      .references(() => chats.id, { onDelete: 'cascade' }),
    userId: uuid('user_id').notNull(),
    role: varchar('role', { length: 8 }).notNull(),
    status: varchar('status', { length: 8 }).notNull(),
    lastReadSeq: bigint('last_read_seq', { mode: 'number' }).notNull().default(0),
    joinedAt: ts('joined_at').notNull(),
    /**
     * When the user consented to this chat's other members (docs/security.md, "Consent"): at once for
     * the creator and for those added by an Accepted contact; otherwise null — a message request —
     * until they accept it or write in the chat. Only then do their presence, typing and read
     * position reach the chat's other members.
     */
    acceptedAt: ts('accepted_at'),
    removedAt: ts('removed_at'),
    updatedAt: ts('updated_at').notNull(),
    /** What the participant is notified of in this chat (NOTIFICATION_LEVELS): carried in MessagePostedKafkaEvent for notifications. */
    notificationLevel: varchar('notification_level', { length: 8 }).notNull().default('all'),
  },
  (t) => [
    uniqueIndex('ux_chat_participants_chat_user').on(t.chatId, t.userId),
    index('ix_chat_participants_user_active').on(t.userId).where(sql`${t.status} = 'Active'`),
    // A chat's Active members, read with every send and every group push: an index-only scan here,
    // where the unique index would need a heap visit per member to test the status.
    index('ix_chat_participants_chat_active').on(t.chatId, t.userId).where(sql`${t.status} = 'Active'`),
    check('ck_chat_participants_role', oneOf(t.role, PARTICIPANT_ROLES)),
    check('ck_chat_participants_status', oneOf(t.status, PARTICIPANT_STATUSES)),
    check('ck_chat_participants_notification_level', oneOf(t.notificationLevel, NOTIFICATION_LEVELS)),
  ],
);

/** The chat's system feed (chat-event.md): created, renamed, participant added/removed. */
export const chatEvents = messengerSchema.table(
  'chat_events',
  {
    id: uuid('id').primaryKey(),
    chatId: uuid('chat_id')
      .notNull()
      .references(() => chats.id, { onDelete: 'cascade' }),
    kind: varchar('kind', { length: 24 }).notNull(),
    actorUserId: uuid('actor_user_id').notNull(),
    subjectUserId: uuid('subject_user_id'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('ix_chat_events_chat').on(t.chatId, t.id), check('ck_chat_events_kind', oneOf(t.kind, CHAT_EVENT_KINDS))],
);
