import { Type } from '@sinclair/typebox';
import { Duration, type SettingsOf } from '../types/index.ts';
import { PUSH_DEFAULTS as D, pushOptionsProblems, type PushOptions, type PushTuning } from './defaults.ts';
import type { DispatchSettings } from './dispatch.job.ts';

/**
 * Settings of the push part's RealtimeDispatchJob and retention (seed 000: RealtimeDispatchOptions;
 * the seed names them MESSENGER_REALTIME_*, and deployments set them so), spread into the service's
 * one settings schema by src/config.ts. Their defaults are defaults.ts's; bounds make loadConfig fail
 * fast, and what no one field can say is pushOptionsProblems (defaults.ts), checked there too. The
 * seed's LockTtl is derived from MaxRunDuration, and BackoffFactor and the jitter are fixed
 * (defaults.ts): none of them is a setting.
 */
export const pushSettings = {
  MESSENGER_REALTIME_POLLING_INTERVAL: Duration({
    default: D.dispatchPollingIntervalMs,
    minimum: '50ms',
    maximum: '1m',
    description: 'RealtimeDispatchJob timer (PollingInterval); a committed realtime_outbox row also wakes it through NOTIFY',
  }),
  MESSENGER_REALTIME_BATCH_SIZE: Type.Integer({
    default: D.dispatchBatchSize,
    minimum: 1,
    maximum: 10_000,
    description: 'realtime_outbox rows claimed per batch (BatchSize); a run repeats while batches come back full',
  }),
  MESSENGER_REALTIME_MAX_RUN_DURATION: Duration({
    default: D.dispatchMaxRunMs,
    minimum: '100ms',
    maximum: '10m',
    description: 'Longest dispatch run (MaxRunDuration); the rest waits for the next tick or wake',
  }),
  MESSENGER_REALTIME_MAX_ATTEMPTS: Type.Integer({
    default: D.dispatchMaxAttempts,
    minimum: 1,
    maximum: 100,
    description: 'Delivery attempts before a row is Quarantined (MaxAttempts)',
  }),
  MESSENGER_REALTIME_BACKOFF_BASE: Duration({
    default: D.dispatchBackoffBaseMs,
    minimum: '1ms',
    description: 'Delay before the second attempt (BackoffBase); claimed rows wait this before a retry',
  }),
  MESSENGER_REALTIME_BACKOFF_CAP: Duration({
    default: D.dispatchBackoffCapMs,
    minimum: '1ms',
    description: 'Longest retry delay before jitter (BackoffCap); at least MESSENGER_REALTIME_BACKOFF_BASE',
  }),
  MESSENGER_REALTIME_RETENTION_DONE: Duration({
    default: D.retentionDoneMs,
    minimum: '1h',
    maximum: '90d',
    description: 'Done realtime_outbox rows are deleted after this (RetentionDone)',
  }),
};

export type PushSettings = SettingsOf<typeof pushSettings>;

/** The settings (validated by loadConfig) and the fixed values as the push options: the one mapping. */
export const pushOptionsOf = (s: PushSettings, t: Pick<PushTuning, 'dispatchBackoffFactor' | 'dispatchBackoffJitter' | 'dispatchLockTtlMs'>): PushOptions => ({
  pollingIntervalMs: s.MESSENGER_REALTIME_POLLING_INTERVAL,
  batchSize: s.MESSENGER_REALTIME_BATCH_SIZE,
  maxRunMs: s.MESSENGER_REALTIME_MAX_RUN_DURATION,
  ...(t.dispatchLockTtlMs === undefined ? {} : { lockTtlMs: t.dispatchLockTtlMs }),
  maxAttempts: s.MESSENGER_REALTIME_MAX_ATTEMPTS,
  backoff: {
    baseMs: s.MESSENGER_REALTIME_BACKOFF_BASE,
    factor: t.dispatchBackoffFactor,
    capMs: s.MESSENGER_REALTIME_BACKOFF_CAP,
    jitter: t.dispatchBackoffJitter,
  },
  retentionDoneMs: s.MESSENGER_REALTIME_RETENTION_DONE,
});

/** loadConfig's share of the one check: the settings with the shipped fixed values. */
export const pushSettingProblems = (s: PushSettings): string[] => pushOptionsProblems(pushOptionsOf(s, D));

/** The dispatch job's settings: the options with the fixed push timeout and idle wait. */
export function dispatchSettingsOf(s: PushSettings, t: PushTuning): DispatchSettings {
  const { retentionDoneMs: _retention, ...o } = pushOptionsOf(s, t);
  return { ...o, pushTimeoutMs: t.realtimePushTimeoutMs, idleWaitMs: t.dispatchIdleWaitMs };
}
