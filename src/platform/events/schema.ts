import { index, timestamp, varchar } from 'drizzle-orm/pg-core';
import { platformSchema } from '../db/platform-schema.ts';

/** Consumer dedupe: one row per handled message, written in the handler's own transaction. */
export const inbox = platformSchema.table(
  'inbox',
  {
    idempotencyKey: varchar('idempotency_key', { length: 300 }).primaryKey(), // `<consumer>:<MessageId>` by default
    consumer: varchar('consumer', { length: 100 }).notNull(),
    processedAt: timestamp('processed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('ix_inbox_processed_at').on(t.processedAt)],
);
