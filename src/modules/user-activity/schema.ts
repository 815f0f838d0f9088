import { sql } from 'drizzle-orm';
import { bigint, char, check, index, inet, integer, jsonb, pgSchema, timestamp, uniqueIndex, uuid, varchar } from 'drizzle-orm/pg-core';

/** Tables of the user-activity context (seed 001; domain docs session.md / property-object-view.md). */
export const userActivity = pgSchema('user_activity');

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * A visitor's session: guest (AnonymousId) or signed-in (UserId after link). Active until the
 * closer ends it for inactivity or a link to another user switches it.
 */
export const sessions = userActivity.table(
  'sessions',
  {
    id: uuid('id').primaryKey(),
    anonymousId: varchar('anonymous_id', { length: 100 }).notNull(),
    userId: uuid('user_id'),
    // Device: kept for the session's own record only, never put into events or logs (PII).
    deviceUserAgent: varchar('device_user_agent', { length: 1024 }),
    deviceIpAddress: inet('device_ip_address'),
    /**
     * SHA-256 (hex) of the device secret handed out when the session started; the secret itself is
     * never stored. Null only on sessions started before device secrets: nothing can prove those.
     */
    deviceSecretHash: char('device_secret_hash', { length: 64 }),
    status: varchar('status', { length: 16 }).notNull(),
    /** Why it ended: Inactivity (closer) or Switched (linked to another user). */
    endReason: varchar('end_reason', { length: 16 }),
    createdAt: ts('created_at').notNull(),
    lastActivityAt: ts('last_activity_at').notNull(),
    endedAt: ts('ended_at'),
    /** LastActivityAt − CreatedAt in whole seconds, set on close. */
    durationSeconds: integer('duration_seconds'),
  },
  (t) => [
    // The closer's scan (phase B) and the backlog gauges: Active rows by LastActivityAt.
    index('ix_sessions_active_last_activity').on(t.lastActivityAt).where(sql`${t.status} = 'Active'`),
    // One Active session per device: the AnonymousId together with the secret that proves it. A
    // start that cannot prove a device gets a session of its own, never another device's.
    uniqueIndex('ux_sessions_active_device').on(t.anonymousId, t.deviceSecretHash).where(sql`${t.status} = 'Active'`),
    // Retention: Inactive rows by end time.
    index('ix_sessions_inactive_ended_at').on(t.endedAt).where(sql`${t.status} = 'Inactive'`),
    check('chk_sessions_status', sql`${t.status} in ('Active', 'Inactive')`),
    check('chk_sessions_end_reason', sql`${t.endReason} is null or ${t.endReason} in ('Inactivity', 'Switched')`),
    check('chk_sessions_duration_nonneg', sql`${t.durationSeconds} is null or ${t.durationSeconds} >= 0`),
    check(
      'chk_sessions_closed_fields',
      sql`(${t.status} = 'Active' and ${t.endedAt} is null and ${t.durationSeconds} is null and ${t.endReason} is null)
       or (${t.status} = 'Inactive' and ${t.endedAt} is not null and ${t.durationSeconds} is not null and ${t.endReason} is not null)`,
    ),
  ],
);

/** One look at a property object within a session; closed with its session or on its own when idle. */
export const propertyObjectViews = userActivity.table(
  'property_object_views',
  {
    id: uuid('id').primaryKey(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'restrict', onUpdate: 'restrict' }),
    propertyObjectId: uuid('property_object_id').notNull(),
    viewSource: varchar('view_source', { length: 50 }).notNull(),
    filterSnapshot: jsonb('filter_snapshot'),
    status: varchar('status', { length: 16 }).notNull(),
    createdAt: ts('created_at').notNull(),
    lastActivityAt: ts('last_activity_at').notNull(),
    endedAt: ts('ended_at'),
    durationSeconds: integer('duration_seconds'),
  },
  (t) => [
    // The closer's scan (phase A) and the backlog gauges.
    index('ix_property_object_views_active_last_activity').on(t.lastActivityAt).where(sql`${t.status} = 'Active'`),
    // A session's views (phase B, link) and the FK check when retention deletes sessions.
    index('ix_property_object_views_session_id').on(t.sessionId),
    index('ix_property_object_views_inactive_ended_at').on(t.endedAt).where(sql`${t.status} = 'Inactive'`),
    check('chk_property_object_views_status', sql`${t.status} in ('Active', 'Inactive')`),
    check('chk_property_object_views_duration_nonneg', sql`${t.durationSeconds} is null or ${t.durationSeconds} >= 0`),
    check(
      'chk_property_object_views_closed_fields',
      sql`(${t.status} = 'Active' and ${t.endedAt} is null and ${t.durationSeconds} is null)
       or (${t.status} = 'Inactive' and ${t.endedAt} is not null and ${t.durationSeconds} is not null)`,
    ),
  ],
);

/** Read model fed by the PropertyObjectViewEnded consumer (property-object-view-stats.md). */
export const propertyObjectViewStats = userActivity.table(
  'property_object_view_stats',
  {
    propertyObjectId: uuid('property_object_id').primaryKey(),
    viewsCount: bigint('views_count', { mode: 'number' }).notNull(),
    totalDurationSeconds: bigint('total_duration_seconds', { mode: 'number' }).notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    check('chk_property_object_view_stats_nonneg', sql`${t.viewsCount} >= 0 and ${t.totalDurationSeconds} >= 0`),
  ],
);

/** Views already counted into the stats: dedupe by PropertyObjectViewId (INV-LVS-003), whatever the message id. */
export const countedPropertyObjectViews = userActivity.table(
  'counted_property_object_views',
  {
    propertyObjectViewId: uuid('property_object_view_id').primaryKey(),
    propertyObjectId: uuid('property_object_id').notNull(),
    countedAt: ts('counted_at').notNull(),
  },
  (t) => [index('ix_counted_property_object_views_counted_at').on(t.countedAt)],
);
