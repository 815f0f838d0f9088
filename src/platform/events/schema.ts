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

/**
 * Dead letters replayed from the ops console, by their place in their `.dlq` topic: a record
 * there cannot be deleted, so this says it was replayed — the console lists it no more and a second
 * replay of it is refused. The consumer's inbox row of the message is deleted in the same
 * transaction, so the replayed original is handled again instead of skipped as a duplicate.
 */
export const deadLetterReplays = platformSchema.table('dead_letter_replays', {
  /** `<dlq topic>/<partition>/<offset>`, as the console names the record. */
  deadLetterId: varchar('dead_letter_id', { length: 300 }).primaryKey(),
  replayedAt: timestamp('replayed_at', { withTimezone: true }).notNull(),
  actor: varchar('actor', { length: 100 }).notNull(),
});
