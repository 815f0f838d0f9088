import { bigint, integer, jsonb, timestamp, varchar } from 'drizzle-orm/pg-core';
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
  /** The last runs that did work or failed, newest first (at most RECENT_RUNS_KEPT): the ops console's run history. */
  recentRuns: jsonb('recent_runs').notNull().default([]),
  /** Set while an operator paused the job: no replica starts a run of it (ops console, /api/ops/jobs/{name}/pause). */
  pausedAt: timestamp('paused_at', { withTimezone: true }),
  pausedBy: varchar('paused_by', { length: 100 }),
  /** Why the operator paused it and when they expect to resume: a planned pause is told from an outage (the console, the alerts' annotations). */
  pauseReason: varchar('pause_reason', { length: 300 }),
  pauseUntil: timestamp('pause_until', { withTimezone: true }),
});

/**
 * The lease over each single-runner lock (lease.ts), one row per lock key. The advisory lock keeps
 * two runs apart while its session lives; the lease lets another replica end that session when the
 * holder stopped running (frozen, stuck event loop) but its kernel still answers keepalives. `token`
 * grows on every acquisition: a write fenced by it (leaseFence) is refused once anyone else has held
 * the lock since. Times are the database's clock, never a replica's.
 */
export const jobLeases = platformSchema.table('job_leases', {
  name: varchar('name', { length: 200 }).primaryKey(),
  holder: varchar('holder', { length: 200 }).notNull(),
  backendPid: integer('backend_pid').notNull(),
  token: bigint('token', { mode: 'bigint' }).notNull(),
  acquiredAt: timestamp('acquired_at', { withTimezone: true }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});
