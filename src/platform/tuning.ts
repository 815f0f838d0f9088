/**
 * Fixed values of the kernel that only a developer tunes (once settings; an operator has no reason to
 * change them, and every extra setting is one more a deployment can get wrong). The service always
 * runs these; a test that needs a short one builds the app in code with `buildApp(config, { tuning })`, or
 * runs the service as a child process through test/support/service-entry.ts.
 */
export const KERNEL_TUNING = {
  /** A client must have sent its whole request (headers and body) within this; otherwise 408 and the connection closes. */
  httpRequestTimeoutMs: 30_000,
  /** A connection on which nothing is read or written for this long is closed (hub sockets ping well within it). */
  httpConnectionTimeoutMs: 120_000,
  /** Longest wait for one new PostgreSQL connection: a silent host fails instead of hanging connect() for the OS TCP timeout. */
  databaseConnectTimeoutMs: 5000,
  /** At start, how long the first database connection is retried (with backoff) before the process exits 1 (0 = one try). */
  databaseStartupWaitMs: 30_000,
  /** Partitions of the topics the service creates (the user replica's consumer runs as many partitions at once). */
  kafkaTopicPartitions: 6,
  /** How often consumer_lag and consumer_oldest_unconsumed_age_seconds are read from the broker. */
  kafkaLagPollingIntervalMs: 15_000,
  /**
   * How long a consumer that died without leaving (SIGKILL, a lost node) keeps its partitions before
   * the group hands them on, which is also how long a replica restarted after a crash waits to join;
   * the broker's group.min.session.timeout.ms (6 s by default) bounds it below. Heartbeats go every
   * third of it, at most every 3 s.
   */
  kafkaConsumerSessionTimeoutMs: 30_000,
  /**
   * Failed attempts in a row on one message (errors that may be its own, not an outage) after which a
   * consumer dead-letters it as CONSUMER_RETRIES_EXHAUSTED; a consumer may set its own maxAttempts.
   */
  kafkaConsumerMaxAttempts: 10,
};

export type KernelTuning = typeof KERNEL_TUNING;
