import type { Backoff } from '../backoff/index.ts';
import { MINUTE_MS, SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';

/**
 * Every default of the database part, in one place: the settings' (settings.ts shows them to
 * operators) and the fixed values only a developer tunes (a test shortens one through buildApp's
 * `tuning` or createPool's timeouts).
 */
export const DB_DEFAULTS = defineDefaults({
  /** DATABASE_POOL_MAX: connections in the shared pool. */
  databasePoolMax: 10,
  /** DATABASE_STATEMENT_TIMEOUT: a query stuck on a lock fails with 57014 instead of holding its connection. */
  databaseStatementTimeoutMs: 30 * SECOND_MS,
  /** DATABASE_IDLE_IN_TRANSACTION_TIMEOUT is fixed: no transaction here waits on anything but the database (once a setting). */
  databaseIdleInTransactionTimeoutMs: 1 * MINUTE_MS,
  /** Longest wait for one new PostgreSQL connection: a silent host fails instead of hanging connect() for the OS TCP timeout (once DATABASE_CONNECT_TIMEOUT). */
  databaseConnectTimeoutMs: 5 * SECOND_MS,
  /** At start, how long the first database connection is retried (with backoff) before the process exits 1 (0 = one try; once DATABASE_STARTUP_WAIT). */
  databaseStartupWaitMs: 30 * SECOND_MS,
  /** The retries of that first connection. */
  databaseStartupBackoff: { baseMs: 500, factor: 2, capMs: 5 * SECOND_MS, jitter: 0.2 } satisfies Backoff,
  /** A health check's ping answers within this, or the database counts as down. */
  databasePingTimeoutMs: 2 * SECOND_MS,
});

/** The database part's fixed values as buildApp and the service take them (a test shortens one). */
export type DbTuning = Pick<typeof DB_DEFAULTS, 'databaseConnectTimeoutMs' | 'databaseStartupWaitMs'>;
