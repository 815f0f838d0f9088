import { SECOND_MS } from '../time.ts';
import { defineDefaults } from '../types/index.ts';
import type { Backoff } from '../backoff/index.ts';

/**
 * Every default of the event bus, in one place: KAFKA_CLIENT_ID's (settings.ts shows it to
 * operators) and the fixed values only a developer tunes (a test shortens one through buildApp's
 * `tuning`, a child process through test/support/service-entry.ts).
 */
export const EVENTS_DEFAULTS = defineDefaults({
  /** KAFKA_CLIENT_ID. */
  kafkaClientId: 'pin-platform-jobs',
  /** Partitions of the topics the service creates (the user replica's consumer runs as many partitions at once; once KAFKA_TOPIC_PARTITIONS). */
  kafkaTopicPartitions: 6,
  /** How often consumer_lag and consumer_oldest_unconsumed_age_seconds are read from the broker (once KAFKA_LAG_POLLING_INTERVAL). */
  kafkaLagPollingIntervalMs: 15 * SECOND_MS,
  /**
   * How long a consumer that died without leaving (SIGKILL, a lost node) keeps its partitions before
   * the group hands them on, which is also how long a replica restarted after a crash waits to join;
   * the broker's group.min.session.timeout.ms (6 s by default) bounds it below. Heartbeats go every
   * third of it, at most every 3 s (kafkajs's default; once KAFKA_CONSUMER_SESSION_TIMEOUT).
   */
  kafkaConsumerSessionTimeoutMs: 30 * SECOND_MS,
  /**
   * Failed attempts in a row on one message (errors that may be its own, not an outage) after which a
   * consumer dead-letters it as CONSUMER_RETRIES_EXHAUSTED; a consumer may set its own maxAttempts
   * (once KAFKA_CONSUMER_MAX_ATTEMPTS).
   */
  kafkaConsumerMaxAttempts: 10,
  /** kafkajs's connect and request timeouts, the health check's, and the largest produce request. */
  kafkaConnectionTimeoutMs: 1 * SECOND_MS,
  kafkaRequestTimeoutMs: 10 * SECOND_MS,
  kafkaHealthTimeoutMs: 2 * SECOND_MS,
  kafkaMaxRequestBytes: 900_000,
  /** Longest stop() waits for the producer and the admin client to disconnect. */
  kafkaStopWaitMs: 2 * SECOND_MS,
  /** Longest wait of an empty fetch; bounds how long stop and resume take. */
  kafkaFetchMaxWaitMs: 500,
  /** A batch handler yields to the consumer's heartbeat and other partitions at least this often. */
  kafkaBatchYieldMs: 500,
  /** A whole-topic read that makes no progress this long gives up. */
  kafkaTopicReaderStallMs: 30 * SECOND_MS,
  /** Lag samples kept per partition for the oldest-unconsumed age. */
  kafkaLagMaxSamples: 1000,
  /** Retry-After of a dead-letter read refused while Kafka is unreachable. */
  deadLetterRetryAfterSeconds: 5,
  /** A dead letter's reason is cut to this many characters. */
  deadLetterMaxReasonChars: 500,
  /** Seed 002: infrastructure errors of a consumer are retried without end, 1 s doubling to 60 s, up to 20 % longer at random. */
  consumerRetryBackoff: { baseMs: 1 * SECOND_MS, factor: 2, capMs: 60 * SECOND_MS, jitter: 0.2 } satisfies Backoff,
  /** A consumer that names none reads one partition at a time and takes this many messages per transaction. */
  consumerPartitionsConcurrently: 1,
  consumerMaxMessagesPerTransaction: 100,
  /** Kafka down at start: the bus is started again after 2 s, doubling to 30 s (no jitter: one replica, one loop). */
  busStartBackoff: { baseMs: 2 * SECOND_MS, factor: 2, capMs: 30 * SECOND_MS, jitter: 0 } satisfies Backoff,
  /** Waits between tries to replace a consumer kafkajs gave up on. */
  consumerReplaceBackoff: { baseMs: 1 * SECOND_MS, factor: 2, capMs: 30 * SECOND_MS, jitter: 0.2 } satisfies Backoff,
  /** @platformatic/kafka consumer: records fetched but not yet handled, past which fetching waits until half are done. */
  platformaticMaxQueuedRecords: 5000,
  /** @platformatic/kafka topic reader: reading to the end that moves no record for this long fails as the bus unavailable. */
  platformaticReaderStallMs: 30 * SECOND_MS,
  /** Connections of the consumers' own pool (a burst of requests never queues their transactions). */
  consumerPoolSize: 6,
});

/** The bus's fixed values as buildApp and createEventBus take them (a test shortens one). */
export type EventsTuning = Pick<
  typeof EVENTS_DEFAULTS,
  'kafkaTopicPartitions' | 'kafkaLagPollingIntervalMs' | 'kafkaConsumerSessionTimeoutMs' | 'kafkaConsumerMaxAttempts' | 'consumerPoolSize'
>;
