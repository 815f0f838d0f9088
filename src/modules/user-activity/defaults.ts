import { HOUR_MS, MINUTE_MS } from '../../platform/time.ts';
import { defineDefaults } from '../../platform/types/index.ts';

/**
 * Every default of the user-activity context, in one place. The first group are its settings'
 * defaults, seed 001's ActivityCloserOptions among them (settings.ts shows them to operators, with the
 * seed's bounds); the rest are fixed values only a developer tunes.
 */
export const USER_ACTIVITY_DEFAULTS = defineDefaults({
  /** Seed 001 ActivityCloserOptions: InactivityThreshold (10..15 min, ADR-0056), PollingInterval ~1 min, BatchSize 500, MaxRunDuration 5 min. */
  inactivityThresholdMs: 12 * MINUTE_MS,
  closerPollingIntervalMs: 1 * MINUTE_MS,
  closerBatchSize: 500,
  closerMaxRunMs: 5 * MINUTE_MS,
  /** USER_ACTIVITY_RETENTION_MONTHS: Inactive sessions and views that ended longer ago are deleted. */
  retentionMonths: 12,

  /**
   * ActivityRetentionJob: hourly is plenty for a line measured in months; a run starts no new delete
   * after 5 min so the next one continues (once USER_ACTIVITY_RETENTION_INTERVAL_MINUTES / _MAX_RUN_MINUTES).
   */
  retentionIntervalMs: 1 * HOUR_MS,
  retentionMaxRunMs: 5 * MINUTE_MS,
  /** Rows deleted per statement: short DELETEs, so the closer never waits long behind one (once USER_ACTIVITY_RETENTION_BATCH_SIZE). */
  retentionBatchSize: 1000,
  /**
   * Tracking calls (session start, session and view heartbeats) per client address (IPv6: per /64)
   * per minute, each route counted on its own; many devices can share one address behind a NAT
   * (once USER_ACTIVITY_RATE_LIMIT_TRACKING_PER_MINUTE; 0 = no limit).
   */
  rateLimitTrackingPerMinute: 1200,
  /** View opens per client address are limited to the tracking limit divided by this (120 a minute at the default 1200). */
  trackingCallsPerViewOpen: 10,
});

/** The fixed values a test may lower (`userActivityModule({ … })`). */
export type UserActivityTuning = Pick<typeof USER_ACTIVITY_DEFAULTS, 'rateLimitTrackingPerMinute'>;

/** The one check of the fixed values at construction (a test's overrides are held to it too). */
export function userActivityTuningProblems(t: UserActivityTuning): string[] {
  // 0 = no limit.
  const ok = Number.isInteger(t.rateLimitTrackingPerMinute) && t.rateLimitTrackingPerMinute >= 0;
  return ok ? [] : [`user-activity rateLimitTrackingPerMinute: must be a whole number ≥ 0 (got ${t.rateLimitTrackingPerMinute})`];
}
