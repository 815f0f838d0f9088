import { DAY_MS, MINUTE_MS, SECOND_MS } from '../../platform/time.ts';
import { defineDefaults } from '../../platform/types/index.ts';

/**
 * Every default of the notifications context, in one place (beside the delivery jobs' options in
 * settings.ts, checked once when the module is built). The first group are its settings' defaults
 * (settings.ts shows them to operators); the rest are product rules and delivery timings that are not
 * knobs (seed 004 names no option for them, and the per-channel MaxAttempts and RetryBackoff live in
 * channel_configs). A test picks a small one by building the module in code, `notificationsModule({ … })`,
 * or through test/support/service-entry.ts for a child process.
 */
export const NOTIFICATIONS_DEFAULTS = defineDefaults({
  /** NOTIFICATIONS_CHAT_COLLAPSE_WINDOW. */
  chatCollapseWindowMs: 1 * MINUTE_MS,
  /** NOTIFICATIONS_SMTP_PORT (submission). */
  smtpPort: 587,

  /** Push-token registrations per user per minute, 429 RATE_LIMITED past it (once NOTIFICATIONS_RATE_LIMIT_PUSH_TOKEN_REGISTRATIONS_PER_MINUTE; 0 = no limit). */
  rateLimitPushTokenRegistrationsPerMinute: 10,
  /** NotificationRetryWorker cycle (seed 004: every minute), under the lock notifications:retry-worker. */
  retryPollingIntervalMs: 1 * MINUTE_MS,
  /** Due Failed notifications claimed per retry batch; a run repeats while batches come back full. */
  retryBatchSize: 200,
  /** A retry run stops claiming after this, inside the seed's one-minute cycle, so one run never overlaps the next tick. */
  retryMaxRunMs: 50 * SECOND_MS,
  /** Dispatcher timer for Pending notifications (a NOTIFY at commit wakes it at once). */
  dispatchPollingIntervalMs: 5 * SECOND_MS,
  /** Pending notifications claimed per dispatcher batch. */
  dispatchBatchSize: 200,
  /** The dispatcher has no run length of its own: this many of its intervals, at least dispatchMaxRunFloorMs. */
  dispatchMaxRunIntervals: 10,
  dispatchMaxRunFloorMs: 1 * SECOND_MS,
  /** Provider calls in flight at once within one batch. */
  sendConcurrency: 32,
  /** A claimed notification is skipped by other workers this long; a crashed worker's rows come back after it. */
  claimLeaseMs: 5 * MINUTE_MS,
  /** Longest wait for one provider call; a timeout is NTF_PROVIDER_TRANSIENT. */
  providerTimeoutMs: 10 * SECOND_MS,
  /** The jobs' safety net above the adapters' own timeout (which should fire first): this many provider timeouts. */
  hardTimeoutProviderTimeouts: 3,
  /** How long sends in flight may finish after a stop is asked (the shutdown budget is 10 s). */
  sendStopGraceMs: 3 * SECOND_MS,
  /** A 429's Retry-After is honoured, but never parks a notification for longer than this. */
  maxRetryAfterMs: 1 * DAY_MS,
  /** Pooled SMTP connections kept open. */
  smtpMaxConnections: 5,
  /** Devices (push tokens) one user may register; one more is refused 409 NTF_PUSH_TOKEN_LIMIT until one is removed. */
  pushTokensMaxPerUser: 20,
  /** Times a failed-delivery webhook may reopen a Sent notification (each reopen is a new DeliveryCycle); then it is terminal Failed. */
  maxReopens: 3,
  /** An Exponential backoff's growth per attempt when the channel's configuration names none. */
  exponentialMultiplier: 2,
  /**
   * A healthy presence lookup takes about a millisecond; past this it counts as unreadable (offline),
   * so a Redis that hangs never keeps the consumer's transaction open.
   */
  presenceLookupTimeoutMs: 500,
  /** MessagePosted events one consumer transaction takes: a partition's backlog commits (and yields to a stop) in small steps. */
  messagesPerTransaction: 10,
  /** pin.messenger.message-posted.v1's partitions (the catalogue's count), each read on its own, in order. */
  messagePostedPartitions: 6,
  /**
   * A webhook signature whose X-Signature-Timestamp is further than this from now is refused as
   * stale (401); inside it a signature seen before is a replay (409). Five minutes, the providers'
   * usual window (once NOTIFICATIONS_WEBHOOK_MAX_SKEW_SECONDS).
   */
  webhookMaxSkewSeconds: 300,
  /**
   * Replicas' clocks may disagree a little (NTP keeps them well within this): a mark outlives its
   * signature's window by this much, so no replica whose clock runs behind still accepts it unguarded.
   */
  webhookReplayClockAllowanceMs: 1 * MINUTE_MS,
  /**
   * A chat notice (chat-notices.ts) folds the chat's later messages only while the window has not
   * passed since its message's SentAt; past that it only lets the chat notify again, as no row does.
   * The window counts from SentAt, so a backlog read late still meets the notices of its time: rows
   * are kept this long past the window, and a message read later than that after an outage notifies
   * once more at most (its notice is then written again and folds the rest). Notices of message
   * requests are never swept (chat-notices.ts, deleteLapsedNotices).
   */
  chatNoticeLagAllowanceMs: 1 * DAY_MS,
  /**
   * notifications-cleanup (cleanup.job.ts): remembered signatures live minutes, lapsed chat notices
   * a day: swept every 10 min, in short DELETEs, a run ending within a minute.
   */
  cleanupIntervalMs: 10 * MINUTE_MS,
  cleanupBatchSize: 1000,
  cleanupMaxRunMs: 1 * MINUTE_MS,
});

/** The delivery timings and product rules a test may shorten (`notificationsModule({ … })`). */
export type NotificationsTuning = Pick<
  typeof NOTIFICATIONS_DEFAULTS,
  | 'retryPollingIntervalMs'
  | 'retryBatchSize'
  | 'dispatchPollingIntervalMs'
  | 'dispatchBatchSize'
  | 'sendConcurrency'
  | 'claimLeaseMs'
  | 'providerTimeoutMs'
  | 'pushTokensMaxPerUser'
  | 'maxReopens'
  | 'rateLimitPushTokenRegistrationsPerMinute'
>;

/** The one check of the fixed values at construction (a test's overrides are held to it too). */
export function notificationsTuningProblems(t: NotificationsTuning): string[] {
  // maxReopens may be 0: a failed receipt for a Sent row is then final at once; a rate limit of 0 is no limit.
  const least = (k: keyof NotificationsTuning) => (k === 'maxReopens' || k === 'rateLimitPushTokenRegistrationsPerMinute' ? 0 : 1);
  return (Object.keys(t) as (keyof NotificationsTuning)[])
    .filter((k) => !(Number.isInteger(t[k]) && t[k] >= least(k)))
    .map((k) => `notifications ${k}: must be a whole number ${least(k) === 0 ? '≥ 0' : '> 0'} (got ${t[k]})`);
}
