import { defineDefaults } from '../types/index.ts';
import { DAY_MS, MINUTE_MS, SECOND_MS } from '../time.ts';

/**
 * Every default of the integration outbox (publisher and cleanup), in one place: the polling
 * interval's is OUTBOX_POLLING_INTERVAL's (settings.ts), the rest are fixed values only a developer
 * tunes (a test shortens one through buildApp's `tuning`, a child process through
 * test/support/service-entry.ts).
 */
export const OUTBOX_DEFAULTS = defineDefaults({
  /** The publisher's timer; NOTIFY on commit wakes it sooner (OUTBOX_POLLING_INTERVAL). */
  outboxPollingIntervalMs: 1 * SECOND_MS,
  /** Rows read and sent per publisher batch (once OUTBOX_BATCH_SIZE). */
  outboxBatchSize: 1000,
  /** A publisher run stops starting new batches after this long; the next tick or wake goes on (once OUTBOX_MAX_RUN_DURATION). */
  outboxMaxRunMs: 5 * SECOND_MS,
  /**
   * A publisher run with nothing left waits this long for the next commit's wake before it ends, so
   * a steady stream of events is served by one run per max run; short enough that an idle replica
   * holds nothing (once OUTBOX_IDLE_WAIT_MS).
   */
  outboxIdleWaitMs: 250,
  /** Connections of the publisher's own pool (its reads and marks never wait behind requests). */
  outboxPublisherPoolSize: 3,
  /** A published outbox row is kept a day, for a replay or a look after an incident (once OUTBOX_RETENTION). */
  outboxRetentionMs: 1 * DAY_MS,
  /** An inbox (dedupe) row is kept a week, Kafka's default retention: a redelivery the broker can still make is caught (once INBOX_RETENTION). */
  inboxRetentionMs: 7 * DAY_MS,
  /** The cleanup's rows per DELETE, run limit and interval. */
  outboxCleanupBatchSize: 1000,
  outboxCleanupMaxRunMs: 5 * MINUTE_MS,
  outboxCleanupIntervalMs: 10 * MINUTE_MS,
  /** The pending-row count the metrics read stops counting here (a bounded count on a huge backlog). */
  outboxPendingCountCap: 1_000_000,
});

export type OutboxTuning = Omit<typeof OUTBOX_DEFAULTS, 'outboxPollingIntervalMs'>;

/** The one check of the publisher's options, at construction (a test's tuning is held to it too). */
export function outboxOptionsProblems(o: { batchSize: number; maxRunMs: number; pollIntervalMs: number }): string[] {
  const problems: string[] = [];
  if (!(Number.isInteger(o.batchSize) && o.batchSize > 0)) problems.push(`outbox batch size: must be a whole number > 0 (got ${o.batchSize})`);
  if (!(o.maxRunMs > 0)) problems.push(`outbox max run: must be > 0 ms (got ${o.maxRunMs})`);
  if (!(o.pollIntervalMs > 0)) problems.push(`OUTBOX_POLLING_INTERVAL: must be > 0 (got ${o.pollIntervalMs} ms)`);
  return problems;
}
