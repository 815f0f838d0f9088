import { sql } from 'drizzle-orm';
import { boolean, check, index, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';
import { MEDIA_KINDS_AV, RECORDING_STATUSES, ROSTER_STATUSES, SESSION_KINDS, SESSION_STATUSES } from '../model/call-kinds.ts';
import { chats } from '../chats/schema.ts';
import { messengerSchema, oneOf, timestamptz as ts } from '../schema.ts';

/** 1:1 calls and conferences: media sessions, their rosters and recordings (seed 000; drizzle part messenger.realtime). */

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
    // A deactivated user's running calls (calls/deactivation.ts), without reading every call ever made.
    index('ix_media_sessions_live_initiator').on(t.initiatorUserId).where(sql`${t.status} in ('Ringing', 'Active')`),
    index('ix_media_sessions_live_callee').on(t.calleeUserId).where(sql`${t.status} in ('Ringing', 'Active')`),
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
    // A deactivated user's conference seats (calls/deactivation.ts).
    index('ix_media_session_participants_joined_user').on(t.userId).where(sql`${t.status} = 'Joined'`),
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
