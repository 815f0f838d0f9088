import { counter, gauge, histogram, type Registry } from '../observability/metrics.ts';

export type ConsumerOutcome = 'handled' | 'duplicate' | 'skipped' | 'dead_lettered';

export function consumerMetrics(registry: Registry) {
  return {
    messages: counter(registry, {
      name: 'consumer_messages_total',
      help: 'Messages seen by a consumer, by outcome (handled, duplicate, skipped, dead_lettered, retried)',
      labelNames: ['consumer', 'outcome'] as const,
    }),
    deadLettered: counter(registry, {
      name: 'consumer_dlq_total',
      help: 'Messages sent to the dead-letter topic, by consumer, origin topic and poison code',
      labelNames: ['consumer', 'topic', 'code'] as const,
    }),
    contractVersionMismatch: counter(registry, {
      name: 'consumer_contract_version_mismatch_total',
      help: 'Messages whose contract-version differs from the one the consumer expects (processed anyway)',
      labelNames: ['consumer'] as const,
    }),
    batchFallbacks: counter(registry, {
      name: 'consumer_batch_fallbacks_total',
      help: 'Groups whose batch handler failed and that were handled again message by message (slower, same outcome)',
      labelNames: ['consumer'] as const,
    }),
    lag: gauge(registry, {
      name: 'consumer_lag',
      help: 'Messages waiting per partition: high watermark minus the group\'s committed offset, read from the broker every 15 s (and on progress); rises while the consumer is stuck. Every replica reports the whole group: use max by (consumer, partition)',
      labelNames: ['consumer', 'topic', 'partition'] as const,
    }),
    oldestUnconsumedAge: gauge(registry, {
      name: 'consumer_oldest_unconsumed_age_seconds',
      help: 'Age of the oldest message the consumer group has not committed yet, over its partitions (dated by the lag poll that first saw it, so at most one poll interval young); 0 when caught up. Alert > 300',
      labelNames: ['consumer', 'topic'] as const,
    }),
    handleDuration: histogram(registry, {
      name: 'consumer_handle_duration_seconds',
      help: 'Duration of one handler call: one message, or the whole group when the consumer has a batch handler',
      labelNames: ['consumer'] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
  };
}

export type ConsumerMetrics = ReturnType<typeof consumerMetrics>;
