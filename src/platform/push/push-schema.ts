import { sql, type SQL } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgSchema, primaryKey, timestamp, uniqueIndex, uuid, varchar, type AnyPgColumn } from 'drizzle-orm/pg-core';

/**
 * The durable push path's own tables (seed 000's RealtimeOutboxEntry and the per-user event stream),
 * in the push part's PostgreSQL schema `push`, migrating as drizzle part `push` (drizzle/push/). That
 * part applies after every module's (migrationParts): the tables were first created by the
 * messenger's part and moved here by drizzle/push/0000 with their rows, ids, positions and indexes.
 * The seed's name `push.realtime_outbox` stays readable as a view over push.realtime_outbox
 * (created by that migration, for the seed's runbook SQL).
 *
 * Kinds are the modules' (push.registerKinds checks them at start, the writer refuses any other),
 * so no constraint here lists them; the target kinds and statuses are this part's own.
 */
export const pushSchema = pgSchema('push');

const ts = (name: string) => timestamp(name, { withTimezone: true });
const oneOf = (column: AnyPgColumn, values: readonly string[]): SQL => sql`${column} in (${sql.raw(values.map((v) => `'${v}'`).join(', '))})`;

/** ChatGroup (chat:{ChatId}) or User (user:{TargetUserId}). */
export const PUSH_TARGET_KINDS = ['ChatGroup', 'User'] as const;
export type PushTargetKind = (typeof PUSH_TARGET_KINDS)[number];

export const PUSH_ROW_STATUSES = ['Pending', 'Done', 'Quarantined'] as const;
export type PushRowStatus = (typeof PUSH_ROW_STATUSES)[number];

/**
 * RealtimeOutboxEntry: one push intent, written in the owner's transaction. Only typed reference ids
 * and enums — never a body, a name or a token (the owner's build step makes the payload at delivery).
 */
export const realtimeOutbox = pushSchema.table(
  'realtime_outbox',
  {
    /** UUIDv7, taken after the owner's row locks, so id order is commit order per group. */
    id: uuid('id').primaryKey(),
    kind: varchar('kind', { length: 32 }).notNull(),
    targetKind: varchar('target_kind', { length: 16 }).notNull(),
    chatId: uuid('chat_id'),
    targetUserId: uuid('target_user_id'),
    /** A logical reference, no FK: a row outlives nothing it points at. */
    messageId: uuid('message_id'),
    refId: uuid('ref_id'),
    sessionKind: varchar('session_kind', { length: 12 }),
    seq: bigint('seq', { mode: 'number' }),
    /** The frame's payload of a carried kind (port.ts); null for every other kind. */
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
    // push path reads Pending rows by chat, and every entry here costs each row twice (its insert
    // and its claim, both non-HOT: the claim moves NextAttemptAt, which ix_rto_due holds).
    index('ix_rto_chat').on(t.chatId).where(sql`${t.chatId} is not null and ${t.status} = 'Quarantined'`),
    check('ck_rto_target_kind', oneOf(t.targetKind, PUSH_TARGET_KINDS)),
    check('ck_rto_status', oneOf(t.status, PUSH_ROW_STATUSES)),
    check('ck_rto_attempts', sql`${t.attempts} >= 0`),
    check(
      'ck_rto_target',
      sql`(${t.targetKind} = 'ChatGroup' and ${t.chatId} is not null) or (${t.targetKind} = 'User' and ${t.targetUserId} is not null)`,
    ),
  ],
);

/** Stream positions, handed out by the dispatcher in push order (never in outbox id order, which is not commit order). */
export const realtimeEventPosition = pushSchema.sequence('realtime_event_position');

/**
 * The per-user event stream: every frame the dispatcher pushes, kept longer than the outbox keeps
 * Done rows, so a client that was away resumes from its last cursor. One pushed outbox row: its
 * references (the payload is rebuilt from them at replay, as at delivery) and its position. A row
 * pushed again after a failed push moves to a new position, so no cursor handed out before it can skip it.
 */
export const realtimeEvents = pushSchema.table(
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
    /** A carried kind's frame payload, as pushed; null for the others. */
    payload: jsonb('payload'),
    /** A group event's membership version when it was pushed: who may read it is judged as at delivery. */
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

/** One row: positions below `trimmedBelow` were deleted by retention; a cursor before it answers 410. */
export const realtimeEventHorizon = pushSchema.table('realtime_event_horizon', {
  id: integer('id').primaryKey(),
  trimmedBelow: bigint('trimmed_below', { mode: 'number' }).notNull(),
});

/**
 * The spans of a chat group's membership versions a user was a member in: [fromVersion, toVersion),
 * toVersion null while still a member. The event stream reads a ChatGroup event for exactly the users
 * whose span holds its membership version — what its live push could reach: nothing before they
 * joined, nothing after they left, again after a re-add. Written by the group's owner through this
 * part's writer (spans-sql.ts) in the transaction that changes the membership, with its version
 * bump. Began in the messenger's schema; drizzle/push/0001 moved it here with its rows.
 */
export const chatMembershipSpans = pushSchema.table(
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
