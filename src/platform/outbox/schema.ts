import { sql } from 'drizzle-orm';
import { index, integer, jsonb, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import { platformSchema } from '../db/platform-schema.ts';

/** Integration events written in the same transaction as the change they announce. */
export const outbox = platformSchema.table(
  'outbox',
  {
    id: uuid('id').primaryKey(), // UUIDv7 = message id; id order = commit order per writer
    topic: varchar('topic', { length: 249 }).notNull(),
    key: varchar('key', { length: 255 }).notNull(),
    eventType: varchar('event_type', { length: 200 }).notNull(),
    contractVersion: integer('contract_version').notNull().default(1),
    aggregateType: varchar('aggregate_type', { length: 100 }).notNull(),
    aggregateId: varchar('aggregate_id', { length: 100 }).notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    correlationId: varchar('correlation_id', { length: 100 }),
    // W3C traceparent of the writer's span (null: tracing off): the publisher sends it as a header.
    traceparent: varchar('traceparent', { length: 55 }),
    payload: jsonb('payload').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    publishedAt: timestamp('published_at', { withTimezone: true }),
    attempts: integer('attempts').notNull().default(0),
    lastError: varchar('last_error', { length: 512 }),
  },
  (t) => [
    index('ix_outbox_pending').on(t.id).where(sql`${t.publishedAt} is null`),
    index('ix_outbox_published_at').on(t.publishedAt).where(sql`${t.publishedAt} is not null`),
  ],
);
