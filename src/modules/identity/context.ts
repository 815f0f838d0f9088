import { settingsProblems, type SettingsOf } from '../../platform/types/index.ts';
import { identitySettings } from './settings.ts';
import type { Db } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/observability/index.ts';
import type { Clock } from '../../platform/time.ts';
import type { IdentityMetrics } from './metrics.ts';
import { IDENTITY_DEFAULTS } from './defaults.ts';

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

/** The identity settings as loadConfig read them. */
export type IdentityConfig = SettingsOf<typeof identitySettings>;

/** The one place the settings (settings.ts: defaults, bounds, units; validated once by loadConfig) become the operations' and jobs' options, taken as they are. */
export function identitySettingsFrom(config: IdentityConfig): IdentitySettings {
  // The one check at construction: values that did not come through loadConfig meet the same bounds.
  const problems = settingsProblems(identitySettings, config);
  if (problems.length > 0) throw new Error(`invalid identity settings: ${problems.join('; ')}`);
  return {
    inlineFanOutThreshold: config.IDENTITY_INLINE_FANOUT_THRESHOLD,
    phoneRegion: config.PHONE_DEFAULT_REGION,
    fanOut: {
      pollingIntervalMs: config.IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL,
      batchSize: config.IDENTITY_ACCESS_FANOUT_BATCH_SIZE,
      maxLeaseMs: config.IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION,
      maxAttempts: config.IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS,
      rangeSize: IDENTITY_DEFAULTS.fanOutRangeSize,
      retryBaseMs: IDENTITY_DEFAULTS.fanOutRetryBaseMs,
      retryCapMs: IDENTITY_DEFAULTS.fanOutRetryCapMs,
    },
    expiry: { intervalMs: IDENTITY_DEFAULTS.assignmentExpiryIntervalMs, batchSize: IDENTITY_DEFAULTS.assignmentExpiryBatchSize },
  };
}
