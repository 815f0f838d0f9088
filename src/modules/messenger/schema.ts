import { sql, type SQL } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, pgSchema, text, timestamp, uniqueIndex, uuid, varchar, type AnyPgColumn } from 'drizzle-orm/pg-core';

/**
 * The messenger context's own PostgreSQL schema, and the tables of the user replica and contact search
 * (seed 002: drizzle part `messenger`, drizzle/messenger/). The chats, messages, contacts, calls and
 * realtime outbox tables (seed 000) live in their parts' schema.ts and migrate as part
 * `messenger.realtime` (drizzle/messenger.realtime/); drizzle.config.ts lists them.
 */
export const messengerSchema = pgSchema('messenger');

/** A `timestamp with time zone` column, as every messenger table stores its instants. */
export const timestamptz = (name: string) => timestamp(name, { withTimezone: true });
const ts = timestamptz;
/** Check-constraint body: the varchar column holds one of the enum's values. */
export const oneOf = (column: AnyPgColumn, values: readonly string[]): SQL =>
  sql`${column} in (${sql.raw(values.map((v) => `'${v}'`).join(', '))})`;
const E164 = (column: string) => sql.raw(`${column} ~ '^\\+[1-9][0-9]{6,14}$'`);

/**
 * MessengerUserEntity: the messenger's read-only replica of identity users (seed 002), fed by
 * pin.identity.users.v1. Id = identity UserId. A phone is unique among live (active) rows only
 * (INV-MU-2); a user whose phone is held by another live row keeps its old phone, or none.
 */
export const users = messengerSchema.table(
  'users',
  {
    id: uuid('id').primaryKey(),
    firstName: varchar('first_name', { length: 128 }).notNull(),
    middleName: varchar('middle_name', { length: 128 }),
    // May be an empty string (seed 002).
    lastName: varchar('last_name', { length: 128 }).notNull(),
    /** E.164; null when the user first appeared with a phone another live row holds. */
    phoneNumber: varchar('phone_number', { length: 16 }),
    /** Status ∈ {Invited, Active}; anything else (Blocked, Archived, unknown) is false — fail closed. */
    isActive: boolean('is_active').notNull(),
    /** payload.Version of the last applied snapshot; only grows (INV-MU-1). */
    identityUserVersion: bigint('identity_user_version', { mode: 'number' }).notNull(),
    /**
     * Bumped by every write of the row, including a phone handed over without a new Version: the
     * search document's external version, so an older read of the row never overwrites a newer one.
     */
    revision: bigint('revision', { mode: 'number' }).notNull().default(1),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('ux_messenger_users_live_phone').on(t.phoneNumber).where(sql`${t.isActive}`),
    check('ck_messenger_users_phone_e164', E164('phone_number')),
    check('ck_messenger_users_version', sql`${t.identityUserVersion} >= 1`),
    check('ck_messenger_users_first_name', sql`${t.firstName} <> ''`),
  ],
);

/**
 * Phone conflicts (INV-MU-2, MSG_USER_PHONE_CONFLICT) for support review: a user whose snapshot
 * asked for a phone another live replica row holds. At most one Open row per user and phone;
 * a newer snapshot of the user supersedes it, and the phone being released hands it over.
 */
export const userPhoneConflicts = messengerSchema.table(
  'user_phone_conflicts',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id').notNull(),
    /** The phone the user's snapshot asked for (E.164). */
    phoneNumber: varchar('phone_number', { length: 16 }).notNull(),
    /** The live row holding it when last seen; null if a concurrent writer took it unseen. */
    holderUserId: uuid('holder_user_id'),
    /** payload.Version of the snapshot that asked for the phone. */
    identityUserVersion: bigint('identity_user_version', { mode: 'number' }).notNull(),
    messageId: varchar('message_id', { length: 128 }).notNull(),
    occurrences: integer('occurrences').notNull().default(1),
    status: text('status').notNull().default('Open'),
    /** Why it closed: Superseded (a newer snapshot), PhoneReleased (the holder let go, phone applied). */
    resolution: text('resolution'),
    detectedAt: ts('detected_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
    resolvedAt: ts('resolved_at'),
  },
  (t) => [
    uniqueIndex('ux_user_phone_conflicts_open').on(t.userId, t.phoneNumber).where(sql`${t.status} = 'Open'`),
    index('ix_user_phone_conflicts_open_phone').on(t.phoneNumber, t.detectedAt).where(sql`${t.status} = 'Open'`),
    index('ix_user_phone_conflicts_status_id').on(t.status, t.id),
    check('ck_user_phone_conflicts_status', sql`${t.status} in ('Open', 'Resolved')`),
    check('ck_user_phone_conflicts_resolution', sql`${t.resolution} is null or ${t.resolution} in ('Superseded', 'PhoneReleased')`),
  ],
);

/**
 * Replica rows whose search document must be (re)written: filled in the replica's transaction,
 * drained after commit by the contact search indexer, so the index never joins the PostgreSQL
 * transaction and an index failure never blocks the consumer (it waits here with a backoff).
 */
export const contactSearchPending = messengerSchema.table(
  'contact_search_pending',
  {
    userId: uuid('user_id').primaryKey(),
    /** Replica revision to index; a newer change raises it while the row waits. */
    revision: bigint('revision', { mode: 'number' }).notNull(),
    enqueuedAt: ts('enqueued_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
  },
  (t) => [index('ix_contact_search_pending_due').on(t.nextAttemptAt)],
);

/** The PostgreSQL search adapter's index: MessengerContactSearchDocument, one per replica row. */
export const contactSearchDocuments = messengerSchema.table(
  'contact_search_documents',
  {
    userId: uuid('user_id').primaryKey(),
    firstName: varchar('first_name', { length: 128 }).notNull(),
    middleName: varchar('middle_name', { length: 128 }),
    lastName: varchar('last_name', { length: 128 }).notNull(),
    phoneNumber: varchar('phone_number', { length: 16 }),
    isActive: boolean('is_active').notNull(),
    /** The replica row's revision; a write with a lower one is ignored. */
    revision: bigint('revision', { mode: 'number' }).notNull(),
    indexedAt: ts('indexed_at').notNull(),
  },
  (t) => [index('ix_contact_search_documents_active_phone').on(t.phoneNumber).where(sql`${t.isActive}`)],
);
