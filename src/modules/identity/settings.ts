import { Type } from '@sinclair/typebox';
import { Duration, Int, phoneRegionSettings } from '../../platform/types/index.ts';
import { IDENTITY_DEFAULTS as D } from './defaults.ts';

/**
 * Settings of the identity context (the AccessFanOutJob config of seed 003, the expiry worker, phone
 * numbers), spread into the service's one settings schema by src/config.ts. Each field is the one
 * source of its bounds and unit, its default is defaults.ts's; context.ts maps them to the jobs' options.
 */
export const identitySettings = {
  IDENTITY_INLINE_FANOUT_THRESHOLD: Int({
    default: D.inlineFanOutThreshold,
    minimum: 0,
    maximum: 100_000,
    description: 'A role with at most this many unique active users gets its UserAccessChanged events inline; above it a fan-out task is queued',
  }),
  IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL: Duration({
    default: D.fanOutPollingIntervalMs,
    minimum: '100ms',
    description: 'AccessFanOutJob queue polling interval (a new task also wakes it through NOTIFY)',
  }),
  IDENTITY_ACCESS_FANOUT_BATCH_SIZE: Int({
    default: D.fanOutBatchSize,
    minimum: 1,
    maximum: 10_000,
    description: 'Users per fan-out page: their events and the task checkpoint commit together',
  }),
  IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION: Duration({
    default: D.fanOutMaxLeaseMs,
    minimum: '1s',
    description: 'Lease of a taken fan-out task, renewed by every checkpoint; once past, another worker resumes it from its Cursor',
  }),
  IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS: Int({
    default: D.fanOutMaxAttempts,
    minimum: 1,
    maximum: 100,
    description: 'Leases a fan-out task may take; when AttemptCount reaches it, a failing task becomes Failed (poison, replay by runbook)',
  }),
  ...phoneRegionSettings,
};
