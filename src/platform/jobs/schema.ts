import { integer, jsonb, timestamp, varchar } from 'drizzle-orm/pg-core';
import { platformSchema } from '../db/platform-schema.ts';

/** Last run of each job across all replicas, for the ops endpoints (what on-call looks at first). */
export const jobState = platformSchema.table('job_state', {
  name: varchar('name', { length: 100 }).primaryKey(),
  lastRunAt: timestamp('last_run_at', { withTimezone: true }),
  lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
  lastOutcome: varchar('last_outcome', { length: 20 }),
  lastDurationMs: integer('last_duration_ms'),
  lastCounts: jsonb('last_counts'),
  lastError: varchar('last_error', { length: 512 }),
  runsTotal: integer('runs_total').notNull().default(0),
  failuresTotal: integer('failures_total').notNull().default(0),
});
