import { Type } from '@sinclair/typebox';
import { Duration, type SettingsOf } from '../types/index.ts';
import { LOCK_TTL_MARGIN_MS } from '../jobs/lock-deadline.ts';
import type { DispatchSettings } from './dispatch.job.ts';

/**
 * Settings of the push part's RealtimeDispatchJob and retention (seed 000: RealtimeDispatchOptions;
 * the seed names them MESSENGER_REALTIME_*, and deployments set them so), spread into the service's
 * one settings schema by src/config.ts. Bounds make loadConfig fail fast (BatchSize > 0,
 * MaxAttempts > 0, backoff > 0); what no one field can say is pushSettingProblems below.
 */
export const pushSettings = {
  MESSENGER_REALTIME_POLLING_INTERVAL: Duration({
    default: '1s',
    minimum: '50ms',
    maximum: '1m',
    description: 'RealtimeDispatchJob timer (PollingInterval); a committed realtime_outbox row also wakes it through NOTIFY',
  }),
  MESSENGER_REALTIME_BATCH_SIZE: Type.Integer({
    default: 200,
    minimum: 1,
    maximum: 10_000,
    description: 'realtime_outbox rows claimed per batch (BatchSize); a run repeats while batches come back full',
  }),
  MESSENGER_REALTIME_MAX_RUN_DURATION: Duration({
    default: '5s',
    minimum: '100ms',
    maximum: '10m',
    description: 'Longest dispatch run (MaxRunDuration); the rest waits for the next tick or wake',
  }),
  MESSENGER_REALTIME_LOCK_TTL: Duration({
    default: '30s',
    minimum: '1s',
    maximum: '1h',
    description:
      'LockTtl: the longest one dispatch run holds the single-runner lock; a run still going then is abandoned and another run (this or another replica) takes over. At least MaxRunDuration + 2s',
  }),
  MESSENGER_REALTIME_MAX_ATTEMPTS: Type.Integer({
    default: 8,
    minimum: 1,
    maximum: 100,
    description: 'Delivery attempts before a row is Quarantined (MaxAttempts)',
  }),
  MESSENGER_REALTIME_BACKOFF_BASE: Duration({
    default: '2s',
    minimum: '1ms',
    description: 'Delay before the second attempt (BackoffBase); claimed rows wait this before a retry',
  }),
  MESSENGER_REALTIME_BACKOFF_FACTOR: Type.Number({
    default: 2,
    minimum: 1,
    maximum: 10,
    description: 'Growth of the retry delay per attempt (BackoffFactor)',
  }),
  MESSENGER_REALTIME_BACKOFF_CAP: Duration({
    default: '2m',
    minimum: '1ms',
    description: 'Longest retry delay before jitter (BackoffCap); at least MESSENGER_REALTIME_BACKOFF_BASE',
  }),
  MESSENGER_REALTIME_BACKOFF_JITTER: Type.Number({
    default: 0.2,
    minimum: 0,
    maximum: 1,
    description: 'Random extra share of the retry delay (0.2 = up to +20%), so a hub outage does not retry in lockstep',
  }),
  MESSENGER_REALTIME_RETENTION_DONE: Duration({
    default: '1d',
    minimum: '1h',
    maximum: '90d',
    description: 'Done realtime_outbox rows are deleted after this (RetentionDone)',
  }),
};

export type PushSettings = SettingsOf<typeof pushSettings>;

/** Fixed values of the push part that only a developer tunes (a test shortens one through buildApp's `tuning`). */
export const PUSH_TUNING = {
  /** A row whose push to the hub/backplane has not finished by then is a failed attempt (retried by the backoff). */
  realtimePushTimeoutMs: 5000,
  /**
   * The per-user event stream keeps events this long; an older cursor answers 410
   * MSG_EVENTS_CURSOR_EXPIRED and the client resyncs over REST: a week covers a device offline over a
   * holiday weekend (a product rule, not a knob).
   */
  eventsRetentionMs: 7 * 86_400_000,
};

export type PushTuning = typeof PUSH_TUNING;

/**
 * A run with nothing left to claim stays this long for the next commit's wake, so a steady stream of
 * sends is served by one run per MaxRunDuration (fixed; once MESSENGER_REALTIME_IDLE_WAIT_MS).
 */
const DISPATCH_IDLE_WAIT_MS = 250;

/** Realtime retention: hourly, off the hour; short DELETEs so the dispatcher's claims never wait long behind one. */
export const RETENTION_SCHEDULE = { cron: '23 * * * *', batchSize: 5000, maxRunMs: 5 * 60_000 } as const;

/** The jobs take the settings as they are: what no one field's bounds can say is checked once, by loadConfig. */
export function pushSettingProblems(s: PushSettings): string[] {
  const problems: string[] = [];
  if (s.MESSENGER_REALTIME_BACKOFF_CAP < s.MESSENGER_REALTIME_BACKOFF_BASE) {
    problems.push('MESSENGER_REALTIME_BACKOFF_CAP: must be ≥ MESSENGER_REALTIME_BACKOFF_BASE');
  }
  // A run must be able to stop by MaxRunDuration and return within the margin before its lock lapses.
  const leastTtl = s.MESSENGER_REALTIME_MAX_RUN_DURATION + LOCK_TTL_MARGIN_MS;
  if (s.MESSENGER_REALTIME_LOCK_TTL < leastTtl) {
    problems.push(`MESSENGER_REALTIME_LOCK_TTL: must be ≥ MESSENGER_REALTIME_MAX_RUN_DURATION + ${LOCK_TTL_MARGIN_MS} ms (${leastTtl} ms)`);
  }
  return problems;
}

/** The one mapping from the settings (validated by loadConfig) and the fixed values to the dispatch job's options. */
export const dispatchSettingsOf = (s: PushSettings, t: Pick<PushTuning, 'realtimePushTimeoutMs'>): DispatchSettings => ({
  pollingIntervalMs: s.MESSENGER_REALTIME_POLLING_INTERVAL,
  batchSize: s.MESSENGER_REALTIME_BATCH_SIZE,
  maxRunMs: s.MESSENGER_REALTIME_MAX_RUN_DURATION,
  lockTtlMs: s.MESSENGER_REALTIME_LOCK_TTL,
  pushTimeoutMs: t.realtimePushTimeoutMs,
  idleWaitMs: DISPATCH_IDLE_WAIT_MS,
  maxAttempts: s.MESSENGER_REALTIME_MAX_ATTEMPTS,
  backoff: {
    baseMs: s.MESSENGER_REALTIME_BACKOFF_BASE,
    factor: s.MESSENGER_REALTIME_BACKOFF_FACTOR,
    capMs: s.MESSENGER_REALTIME_BACKOFF_CAP,
    jitter: s.MESSENGER_REALTIME_BACKOFF_JITTER,
  },
});
