import { defineDefaults } from '../types/index.ts';
import { DAY_MS, MINUTE_MS, SECOND_MS } from '../time.ts';
import { LOCK_TTL_MARGIN_MS } from '../jobs/lock-deadline.ts';

/**
 * Every default of the push part, in one place (River's way: a `…Default` per option beside the
 * options type, one check at construction). The first group are the defaults of the settings
 * seed 000 lists as RealtimeDispatchOptions (settings.ts shows them to operators); the rest are fixed
 * values only a developer tunes, which a test shortens through buildApp's `tuning`.
 */
export const PUSH_DEFAULTS = defineDefaults({
  /** PollingInterval: the dispatcher's timer (a committed row also wakes it through NOTIFY). */
  dispatchPollingIntervalMs: 1 * SECOND_MS,
  /** BatchSize: rows claimed per batch. */
  dispatchBatchSize: 200,
  /** MaxRunDuration of one dispatch run. */
  dispatchMaxRunMs: 5 * SECOND_MS,
  /** MaxAttempts before a row is Quarantined. */
  dispatchMaxAttempts: 8,
  /** BackoffBase: the delay before the second attempt. */
  dispatchBackoffBaseMs: 2 * SECOND_MS,
  /** BackoffCap: the longest retry delay before jitter. */
  dispatchBackoffCapMs: 2 * MINUTE_MS,
  /** RetentionDone: Done rows are deleted after this. */
  retentionDoneMs: 1 * DAY_MS,

  /** BackoffFactor (seed 000: 2.0): growth of the retry delay per attempt (once MESSENGER_REALTIME_BACKOFF_FACTOR). */
  dispatchBackoffFactor: 2,
  /** Random extra share of the retry delay (up to +20%), so a hub outage does not retry in lockstep (once MESSENGER_REALTIME_BACKOFF_JITTER). */
  dispatchBackoffJitter: 0.2,
  /** A row whose push to the hub/backplane has not finished by then is a failed attempt (retried by the backoff). */
  realtimePushTimeoutMs: 5 * SECOND_MS,
  /** A run with nothing left to claim stays this long for the next commit's wake, so a steady stream is served by one run per MaxRunDuration. */
  dispatchIdleWaitMs: 250,
  /**
   * The per-user event stream keeps events this long; an older cursor answers 410
   * MSG_EVENTS_CURSOR_EXPIRED and the client resyncs over REST: a week covers a device offline over a
   * holiday weekend (a product rule, not a knob).
   */
  eventsRetentionMs: 7 * DAY_MS,
  /** Realtime retention: hourly, off the hour; short DELETEs so the dispatcher's claims never wait long behind one. */
  retentionCron: '23 * * * *',
  retentionBatchSize: 5000,
  retentionMaxRunMs: 5 * MINUTE_MS,
  /** Pages of the quarantine list and the event stream, and rows one requeue moves (its most: requeueMaxLimit). */
  quarantinePageDefault: 100,
  streamPageDefault: 100,
  requeueLimitDefault: 100,
  requeueMaxLimit: 1000,
  /** A row's LastError is cut to this many characters. */
  lastErrorMaxLength: 512,
});

/** What the seed's RealtimeDispatchOptions settings set (settings.ts); the rest of PUSH_DEFAULTS is fixed. */
type SettingBacked =
  | 'dispatchPollingIntervalMs'
  | 'dispatchBatchSize'
  | 'dispatchMaxRunMs'
  | 'dispatchMaxAttempts'
  | 'dispatchBackoffBaseMs'
  | 'dispatchBackoffCapMs'
  | 'retentionDoneMs';

/**
 * The push part's fixed values as buildApp takes them (a test shortens one). `dispatchLockTtlMs` is
 * unset in service: the kernel derives the LockTtl from MaxRunDuration (lockTtlOf: at least 30 s,
 * twice MaxRunDuration plus the margin); a test sets a short one to see a takeover.
 */
export type PushTuning = Omit<typeof PUSH_DEFAULTS, SettingBacked> & { dispatchLockTtlMs?: number };

/** RealtimeDispatchOptions in milliseconds, as the dispatcher and the retention job are built from them. */
export interface PushOptions {
  pollingIntervalMs: number;
  batchSize: number;
  maxRunMs: number;
  lockTtlMs?: number;
  maxAttempts: number;
  backoff: { baseMs: number; factor: number; capMs: number; jitter: number };
  retentionDoneMs: number;
}

/**
 * The one check of the push options, at construction (pushJobs) and in loadConfig: what the seed
 * demands (BatchSize > 0, MaxAttempts > 0, backoff > 0) and what no one setting's bounds can say.
 * Each problem names the setting an operator would change.
 */
export function pushOptionsProblems(o: PushOptions): string[] {
  const problems: string[] = [];
  if (!(o.batchSize > 0)) problems.push('MESSENGER_REALTIME_BATCH_SIZE: must be > 0');
  if (!(o.maxAttempts > 0)) problems.push('MESSENGER_REALTIME_MAX_ATTEMPTS: must be > 0');
  if (!(o.pollingIntervalMs > 0)) problems.push('MESSENGER_REALTIME_POLLING_INTERVAL: must be > 0');
  if (!(o.backoff.baseMs > 0)) problems.push('MESSENGER_REALTIME_BACKOFF_BASE: must be > 0');
  if (o.backoff.capMs < o.backoff.baseMs) problems.push('MESSENGER_REALTIME_BACKOFF_CAP: must be ≥ MESSENGER_REALTIME_BACKOFF_BASE');
  if (!(o.backoff.factor >= 1)) problems.push('backoff factor: must be ≥ 1');
  if (!(o.backoff.jitter >= 0 && o.backoff.jitter <= 1)) problems.push('backoff jitter: must be between 0 and 1');
  // A run must be able to stop by MaxRunDuration and return within the margin before its lock lapses.
  if (o.lockTtlMs !== undefined && o.lockTtlMs < o.maxRunMs + LOCK_TTL_MARGIN_MS) {
    problems.push(`lock TTL: must be ≥ MESSENGER_REALTIME_MAX_RUN_DURATION + ${LOCK_TTL_MARGIN_MS} ms (${o.maxRunMs + LOCK_TTL_MARGIN_MS} ms)`);
  }
  return problems;
}
