import type { SettingsOf } from '../../platform/types/index.ts';
import type { identitySettings } from './settings.ts';
import type { Db } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/observability/index.ts';
import type { Clock } from '../../platform/time.ts';
import type { IdentityMetrics } from './metrics.ts';

/** What the identity operations and workers share. */
export interface IdentityContext {
  db: Db;
  clock: Clock;
  log: Logger;
  metrics: IdentityMetrics;
  settings: IdentitySettings;
}

/** AccessFanOutJob's options (seed 003 config: PollingInterval, BatchSize, MaxLeaseDuration, MaxAttempts). */
export interface AccessFanOutSettings {
  pollingIntervalMs: number;
  /** Users per page. */
  batchSize: number;
  maxLeaseMs: number;
  maxAttempts: number;
  /** Users per sub-task of a large role's split (UserId ranges leased on their own). */
  rangeSize: number;
  /** Delay before the retry of a task whose page failed (the kernel backoff's base), ms. */
  retryBaseMs: number;
  /** The retry delay's cap, ms. */
  retryCapMs: number;
}

export interface AssignmentExpirySettings {
  intervalMs: number;
  /** Users per expiry transaction. */
  batchSize: number;
}

export interface IdentitySettings {
  inlineFanOutThreshold: number;
  phoneRegion: string;
  fanOut: AccessFanOutSettings;
  expiry: AssignmentExpirySettings;
}

/**
 * A failed fan-out page hands its task back after 1 s, doubling per attempt up to 1 min (AttemptCount
 * still counts toward MaxAttempts): quick enough for a blip, slow enough not to hammer a database
 * that is down. Fixed values (once IDENTITY_ACCESS_FANOUT_RETRY_BASE_MS/_CAP_MS).
 */
export const FANOUT_RETRY_BASE_MS = 1000;
export const FANOUT_RETRY_CAP_MS = 60_000;
/**
 * A fan-out task of a role with more users splits on its first page into sub-tasks of this many users
 * each (by UserId range), leased on their own, so several instances share one large role. Fixed (once
 * IDENTITY_ACCESS_FANOUT_RANGE_SIZE): it only trades tasks per role against parallelism.
 */
export const FANOUT_RANGE_SIZE = 5000;
/**
 * The expiry worker's cycle and users per transaction: an assignment outlives its ExpiresAt by at
 * most ~30 s, and a batch stays a short transaction (once IDENTITY_ASSIGNMENT_EXPIRY_INTERVAL_MS/_BATCH_SIZE).
 */
export const ASSIGNMENT_EXPIRY_INTERVAL_MS = 30_000;
export const ASSIGNMENT_EXPIRY_BATCH_SIZE = 500;

/** The identity settings as loadConfig read them. */
export type IdentityConfig = SettingsOf<typeof identitySettings>;

/** The one place the settings (settings.ts: defaults, bounds, units; validated once by loadConfig) become the operations' and jobs' options, taken as they are. */
export function identitySettingsFrom(config: IdentityConfig): IdentitySettings {
  return {
    inlineFanOutThreshold: config.IDENTITY_INLINE_FANOUT_THRESHOLD,
    phoneRegion: config.PHONE_DEFAULT_REGION,
    fanOut: {
      pollingIntervalMs: config.IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL,
      batchSize: config.IDENTITY_ACCESS_FANOUT_BATCH_SIZE,
      maxLeaseMs: config.IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION,
      maxAttempts: config.IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS,
      rangeSize: FANOUT_RANGE_SIZE,
      retryBaseMs: FANOUT_RETRY_BASE_MS,
      retryCapMs: FANOUT_RETRY_CAP_MS,
    },
    expiry: { intervalMs: ASSIGNMENT_EXPIRY_INTERVAL_MS, batchSize: ASSIGNMENT_EXPIRY_BATCH_SIZE },
  };
}
