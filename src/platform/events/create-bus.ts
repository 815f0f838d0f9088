import type { Logger } from '../observability/logger.ts';
import type { EventBus } from './bus.ts';
import { createInProcessBus } from './in-process-bus.ts';
import { createKafkaBus } from './kafka-bus.ts';
import { kafkaSecurity, type KafkaSecuritySettings } from './kafka-security.ts';
import type { EventBusSettings } from './settings.ts';
import { EVENTS_DEFAULTS, type EventsTuning } from './defaults.ts';
import { topicsToCreate, type CatalogueTopic } from './topics.ts';

export type { EventBusSettings };

/** The bus's fixed values (EVENTS_DEFAULTS); a test shortens one. */
export type KafkaTuning = Omit<EventsTuning, 'consumerPoolSize'>;

/**
 * Kafka when KAFKA_BROKERS is set (creating every catalogue topic and its DLQ twin at start),
 * otherwise the in-process bus. Call `start()` on the result before subscribing or publishing.
 * Throws, naming the setting, when a KAFKA_SSL_* file cannot be read or loaded.
 */
export function createEventBus(
  settings: Omit<EventBusSettings, keyof KafkaSecuritySettings | 'KAFKA_CLIENT'> & KafkaSecuritySettings & Partial<Pick<EventBusSettings, 'KAFKA_CLIENT'>>,
  deps: { log: Logger; catalogue: readonly CatalogueTopic[]; tuning?: KafkaTuning },
): EventBus {
  const tuning = deps.tuning ?? EVENTS_DEFAULTS;
  if (!settings.KAFKA_BROKERS) {
    return createInProcessBus({ log: deps.log, partitions: tuning.kafkaTopicPartitions, consumerMaxAttempts: tuning.kafkaConsumerMaxAttempts });
  }
  return createKafkaBus({
    client: settings.KAFKA_CLIENT,
    brokers: settings.KAFKA_BROKERS.split(','),
    clientId: settings.KAFKA_CLIENT_ID,
    security: kafkaSecurity(settings),
    log: deps.log,
    consumerMaxAttempts: tuning.kafkaConsumerMaxAttempts,
    lagPollIntervalMs: tuning.kafkaLagPollingIntervalMs,
    consumerSessionTimeoutMs: tuning.kafkaConsumerSessionTimeoutMs,
    topics: topicsToCreate(deps.catalogue, {
      prefix: settings.KAFKA_TOPIC_PREFIX,
      partitions: tuning.kafkaTopicPartitions,
    }),
  });
}
