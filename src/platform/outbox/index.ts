/** The integration outbox's public surface: enqueue in a transaction, the publisher and cleanup jobs. */
export { enqueue, OUTBOX_CHANNEL, outboxInsertSelect, sqlLiteral, type NewEvent, type OutboxRowExpressions } from './enqueue.ts';
export { outboxSettings, type OutboxSettings } from './settings.ts';
export {
  createOutboxPublisher,
  OUTBOX_PUBLISHER_JOB,
  outboxPublisherJob,
  type OutboxPublisherOptions,
  type PublishCounts,
} from './publisher.ts';
export { OUTBOX_CLEANUP_JOB, outboxCleanupJob, type OutboxCleanupOptions, type OutboxCleanupSettings } from './cleanup.ts';
export { OUTBOX_DEFAULTS, outboxOptionsProblems, type OutboxTuning } from './defaults.ts';
