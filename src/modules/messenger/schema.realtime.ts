import { sql, type SQL } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, text, timestamp, uniqueIndex, uuid, varchar, type AnyPgColumn } from 'drizzle-orm/pg-core';
import { MEDIA_KINDS_AV, RECORDING_STATUSES, ROSTER_STATUSES, SESSION_KINDS, SESSION_STATUSES } from './calls/kinds.ts';
import { CHAT_EVENT_KINDS, CHAT_KINDS, PARTICIPANT_ROLES, PARTICIPANT_STATUSES } from './chats/kinds.ts';
import { BLACKLIST_STATUSES, CONTACT_STATUSES } from './contacts/kinds.ts';
import { MESSAGE_CONTENT_KINDS } from './messages/rules.ts';
import { REALTIME_DISPATCH_KINDS, REALTIME_OUTBOX_STATUSES, REALTIME_TARGET_KINDS } from './realtime-dispatch/kinds.ts';
import { messengerSchema } from './schema.ts';

/**
 * The messenger's chats, messages, contacts, blacklist, calls and conferences, and the realtime
 * outbox that announces their changes to the hub (seed 000). Its own migration part
 * (drizzle/messenger.realtime/), applied after the user replica's.
 */

const ts = (name: string) => timestamp(name, { withTimezone: true });
const oneOf = (column: AnyPgColumn, values: readonly string[]): SQL =>
  sql`${column} in (${sql.raw(values.map((v) => `'${v}'`).join(', '))})`;

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
    status: varchar('status', { length: 16 }).notNull().default('Pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    /** Error class and code only, no PII. */
    lastError: varchar('last_error', { length: 512 }),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    /** Bumped by every claim, outcome and requeue: an outcome only lands on the version it claimed. */
    rowVersion: integer('row_version').notNull().default(0),
  },
  (t) => [
    index('ix_rto_due').on(t.status, t.nextAttemptAt),
    index('ix_rto_chat').on(t.chatId),
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
    removedAt: ts('removed_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_chat_participants_chat_user').on(t.chatId, t.userId),
    index('ix_chat_participants_user_active').on(t.userId).where(sql`${t.status} = 'Active'`),
    check('ck_chat_participants_role', oneOf(t.role, PARTICIPANT_ROLES)),
    check('ck_chat_participants_status', oneOf(t.status, PARTICIPANT_STATUSES)),
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

/** Message (message.md). A deleted message keeps its Seq as a tombstone, so the Seq stream stays gapless. */
export const messages = messengerSchema.table(
  'messages',
  {
    id: uuid('id').primaryKey(),
    chatId: uuid('chat_id')
      .notNull()
      .references(() => chats.id, { onDelete: 'cascade' }),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    senderUserId: uuid('sender_user_id').notNull(),
    kind: varchar('kind', { length: 8 }).notNull(),
    body: text('body'),
    fileMeta: jsonb('file_meta'),
    cardText: text('card_text'),
    sentAt: ts('sent_at').notNull(),
    editedAt: ts('edited_at'),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    uniqueIndex('ux_messages_chat_seq').on(t.chatId, t.seq),
    check('ck_messages_kind', oneOf(t.kind, MESSAGE_CONTENT_KINDS)),
    check('ck_messages_seq', sql`${t.seq} >= 1`),
  ],
);

/** Contact (contact.md): one row per pair of users, whichever asked first. */
export const contacts = messengerSchema.table(
  'contacts',
  {
    id: uuid('id').primaryKey(),
    requesterUserId: uuid('requester_user_id').notNull(),
    addresseeUserId: uuid('addressee_user_id').notNull(),
    status: varchar('status', { length: 10 }).notNull(),
    removedByUserId: uuid('removed_by_user_id'),
    createdAt: ts('created_at').notNull(),
    acceptedAt: ts('accepted_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_contacts_pair').on(sql`least(${t.requesterUserId}, ${t.addresseeUserId})`, sql`greatest(${t.requesterUserId}, ${t.addresseeUserId})`),
    index('ix_contacts_addressee').on(t.addresseeUserId),
    index('ix_contacts_requester').on(t.requesterUserId),
    check('ck_contacts_status', oneOf(t.status, CONTACT_STATUSES)),
    check('ck_contacts_not_self', sql`${t.requesterUserId} <> ${t.addresseeUserId}`),
  ],
);

/** Blacklist (blacklist.md): the owner blocked the user; unblocking keeps the row as Unblocked. */
export const blacklistEntries = messengerSchema.table(
  'blacklist_entries',
  {
    id: uuid('id').primaryKey(),
    ownerUserId: uuid('owner_user_id').notNull(),
    blockedUserId: uuid('blocked_user_id').notNull(),
    status: varchar('status', { length: 10 }).notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_blacklist_owner_blocked').on(t.ownerUserId, t.blockedUserId),
    check('ck_blacklist_status', oneOf(t.status, BLACKLIST_STATUSES)),
    check('ck_blacklist_not_self', sql`${t.ownerUserId} <> ${t.blockedUserId}`),
  ],
);

/** A media session (call-session.md / conference-session.md): a 1:1 call (Direct) or a chat's conference. */
export const mediaSessions = messengerSchema.table(
  'media_sessions',
  {
    id: uuid('id').primaryKey(),
    sessionKind: varchar('session_kind', { length: 12 }).notNull(),
    chatId: uuid('chat_id').references(() => chats.id, { onDelete: 'cascade' }),
    initiatorUserId: uuid('initiator_user_id').notNull(),
    /** Direct only: who is called. */
    calleeUserId: uuid('callee_user_id'),
    media: varchar('media', { length: 8 }).notNull(),
    status: varchar('status', { length: 12 }).notNull(),
    /** The media server room; the only media reference ever stored (tokens are minted at delivery). */
    roomName: varchar('room_name', { length: 64 }).notNull(),
    ringExpiresAt: ts('ring_expires_at'),
    createdAt: ts('created_at').notNull(),
    answeredAt: ts('answered_at'),
    endedAt: ts('ended_at'),
    endedByUserId: uuid('ended_by_user_id'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('ix_media_sessions_ringing').on(t.ringExpiresAt).where(sql`${t.status} = 'Ringing'`),
    uniqueIndex('ux_media_sessions_live_conference').on(t.chatId).where(sql`${t.sessionKind} = 'Conference' and ${t.status} = 'Active'`),
    check('ck_media_sessions_kind', oneOf(t.sessionKind, SESSION_KINDS)),
    check('ck_media_sessions_media', oneOf(t.media, MEDIA_KINDS_AV)),
    check('ck_media_sessions_status', oneOf(t.status, SESSION_STATUSES)),
    check(
      'ck_media_sessions_shape',
      sql`(${t.sessionKind} = 'Direct' and ${t.calleeUserId} is not null) or (${t.sessionKind} = 'Conference' and ${t.chatId} is not null)`,
    ),
  ],
);

/** The conference roster (call-participant.md). */
export const mediaSessionParticipants = messengerSchema.table(
  'media_session_participants',
  {
    id: uuid('id').primaryKey(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => mediaSessions.id, { onDelete: 'cascade' }),
    userId: uuid('user_id').notNull(),
    status: varchar('status', { length: 8 }).notNull(),
    screenSharing: boolean('screen_sharing').notNull().default(false),
    invitedAt: ts('invited_at'),
    joinedAt: ts('joined_at'),
    leftAt: ts('left_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_media_session_participants_user').on(t.sessionId, t.userId),
    check('ck_media_session_participants_status', oneOf(t.status, ROSTER_STATUSES)),
  ],
);

/** A conference recording (call-recording.md): one running at a time per conference. */
export const callRecordings = messengerSchema.table(
  'call_recordings',
  {
    id: uuid('id').primaryKey(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => mediaSessions.id, { onDelete: 'cascade' }),
    startedByUserId: uuid('started_by_user_id').notNull(),
    status: varchar('status', { length: 10 }).notNull(),
    errorCode: varchar('error_code', { length: 64 }),
    startedAt: ts('started_at').notNull(),
    stoppedAt: ts('stopped_at'),
    completedAt: ts('completed_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_call_recordings_running').on(t.sessionId).where(sql`${t.status} = 'Recording'`),
    check('ck_call_recordings_status', oneOf(t.status, RECORDING_STATUSES)),
  ],
);
