import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, smallint, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import { platformSchema } from '../db/platform-schema.ts';

/**
 * Every action taken through the ops API (the console calls it too): who, in which role, what, on
 * which target and filter, how many rows matched and changed, and when. A bulk action's row is
 * written when it starts and updated as it goes (`changed`, `status`), so it is also its progress.
 * Every admin route's action and every refusal of an authenticated caller is here too (the HTTP
 * kernel's admin audit hook), with the status the caller was answered.
 */
export const opsAudit = platformSchema.table(
  'ops_audit',
  {
    id: uuid('id').primaryKey(),
    at: timestamp('at', { withTimezone: true }).notNull(),
    actor: varchar('actor', { length: 100 }).notNull(),
    role: varchar('role', { length: 20 }).notNull(),
    action: varchar('action', { length: 50 }).notNull(),
    target: varchar('target', { length: 200 }).notNull(),
    filter: jsonb('filter').notNull().default({}),
    dryRun: boolean('dry_run').notNull().default(false),
    matched: integer('matched'),
    changed: integer('changed').notNull().default(0),
    status: varchar('status', { length: 20 }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    error: varchar('error', { length: 512 }),
    /** The HTTP status the caller was answered (null on rows written before it was kept). */
    httpStatus: smallint('http_status'),
    /** A running bulk action: the replica running it and its last sign of life (the database's clock). */
    holder: varchar('holder', { length: 200 }),
    beatAt: timestamp('beat_at', { withTimezone: true }),
  },
  // The partial index keeps the sweep for runs that stopped beating to the few running rows.
  (t) => [index('ops_audit_at_idx').on(t.at), index('ops_audit_running_idx').on(t.beatAt).where(sql`status = 'running'`)],
);

/** Each replica's heartbeat for the console: its hub connections, written every few seconds. */
export const opsReplicas = platformSchema.table('ops_replicas', {
  holder: varchar('holder', { length: 200 }).primaryKey(),
  hubConnections: integer('hub_connections').notNull(),
  seenAt: timestamp('seen_at', { withTimezone: true }).notNull(),
});
