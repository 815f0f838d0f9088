import { Type } from '@sinclair/typebox';
import { Duration, type SettingsOf } from '../../platform/types/index.ts';
import { USER_ACTIVITY_DEFAULTS as D } from './defaults.ts';

/**
 * Settings of the user-activity context (spread into ConfigSchema), one group per job. Each TypeBox
 * field is the one source of its bounds and unit (its default is defaults.ts's): loadConfig fails fast at start with every
 * bad value named (the seed's "validation at host start"), and `settingsProblems` applies the same
 * bounds to values that did not come through loadConfig (tests, benchmarks).
 */

/** ActivityCloserJob (seed 001, "ActivityCloserOptions"). */
export const activityCloserSettings = {
  USER_ACTIVITY_INACTIVITY_THRESHOLD: Duration({
    default: D.inactivityThresholdMs,
    minimum: '10m',
    maximum: '15m',
    description: 'ActivityCloserJob InactivityThreshold: sessions and views idle longer than this are closed (10..15 min, ADR-0056)',
  }),
  USER_ACTIVITY_CLOSER_POLLING_INTERVAL: Duration({
    default: D.closerPollingIntervalMs,
    minimum: '1s',
    maximum: '1h',
    description: 'ActivityCloserJob PollingInterval: how often the closer runs',
  }),
  USER_ACTIVITY_CLOSER_BATCH_SIZE: Type.Integer({
    default: D.closerBatchSize,
    minimum: 1,
    maximum: 10_000,
    description: 'ActivityCloserJob BatchSize: rows claimed per batch; a run repeats while batches come back full',
  }),
  USER_ACTIVITY_CLOSER_MAX_RUN_DURATION: Duration({
    default: D.closerMaxRunMs,
    minimum: '1s',
    maximum: '1h',
    description: 'ActivityCloserJob MaxRunDuration: a run stops starting new batches after this; the next tick takes the rest',
  }),
};

/** ActivityRetentionJob. */
export const activityRetentionSettings = {
  USER_ACTIVITY_RETENTION_MONTHS: Type.Integer({
    default: D.retentionMonths,
    minimum: 1,
    maximum: 120,
    description: 'ActivityRetentionJob: Inactive sessions and views that ended longer ago than this are deleted',
  }),
};

export const userActivitySettings = { ...activityCloserSettings, ...activityRetentionSettings };

export type ActivityCloserSettings = SettingsOf<typeof activityCloserSettings>;
export type ActivityRetentionSettings = SettingsOf<typeof activityRetentionSettings>;
/** The userActivity settings as loadConfig read them. */
export type UserActivitySettings = SettingsOf<typeof userActivitySettings>;
