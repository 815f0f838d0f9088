import { MINUTE_MS, SECOND_MS } from '../../platform/time.ts';
import { defineDefaults } from '../../platform/types/index.ts';

/**
 * Every default of the identity context, in one place (beside the options in context.ts, which
 * identitySettingsFrom builds once). The first group are its settings' defaults, the seed's
 * AccessFanOutJob config among them (settings.ts shows them to operators); the rest are fixed values
 * only a developer tunes.
 */
export const IDENTITY_DEFAULTS = defineDefaults({
  /** IDENTITY_INLINE_FANOUT_THRESHOLD: a role with at most this many users gets its events inline. */
  inlineFanOutThreshold: 500,
  /** Seed 003 AccessFanOutJob PollingInterval (5 s), BatchSize (500), MaxLeaseDuration (5 min), MaxAttempts. */
  fanOutPollingIntervalMs: 5 * SECOND_MS,
  fanOutBatchSize: 500,
  fanOutMaxLeaseMs: 5 * MINUTE_MS,
  fanOutMaxAttempts: 5,

  /**
   * A failed fan-out page hands its task back after 1 s, doubling per attempt up to 1 min (AttemptCount
   * still counts toward MaxAttempts): quick enough for a blip, slow enough not to hammer a database
   * that is down (once IDENTITY_ACCESS_FANOUT_RETRY_BASE_MS/_CAP_MS).
   */
  fanOutRetryBaseMs: 1 * SECOND_MS,
  fanOutRetryCapMs: 1 * MINUTE_MS,
  /**
   * A fan-out task of a role with more users splits on its first page into sub-tasks of this many users
   * each (by UserId range), leased on their own, so several instances share one large role (once
   * IDENTITY_ACCESS_FANOUT_RANGE_SIZE): it only trades tasks per role against parallelism.
   */
  fanOutRangeSize: 5000,
  /** At most this many sub-tasks per role; the last one takes whatever lies past its boundary. */
  fanOutMaxSubTasks: 1000,
  /**
   * The expiry worker's cycle and users per transaction: an assignment outlives its ExpiresAt by at
   * most ~30 s, and a batch stays a short transaction (once IDENTITY_ASSIGNMENT_EXPIRY_INTERVAL_MS/_BATCH_SIZE).
   */
  assignmentExpiryIntervalMs: 30 * SECOND_MS,
  assignmentExpiryBatchSize: 500,
  /** The unpublished-events gauge counts up to this (far past its alert's 1,000), so a scrape after a long outage stays cheap. */
  unpublishedCountCap: 100_000,
  /** Users per snapshot query when a whole role is announced in one transaction (archive). */
  roleSnapshotChunk: 1000,
});
