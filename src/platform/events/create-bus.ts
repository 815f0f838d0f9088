import type { Logger } from '../observability/logger.ts';
import type { EventBus } from './bus.ts';
import { createInProcessBus } from './in-process-bus.ts';
import { createKafkaBus } from './kafka-bus.ts';
import { kafkaSecurity, type KafkaSecuritySettings } from './kafka-security.ts';
import type { EventBusSettings } from './settings.ts';
import { topicsToCreate, type CatalogueTopic } from './topics.ts';

export type { EventBusSettings };

/**
 * Kafka when KAFKA_BROKERS is set (creating every catalogue topic and its DLQ twin at start),
 * otherwise the in-process bus. Call `start()` on the result before subscribing or publishing.
 * Throws, naming the setting, when a KAFKA_SSL_* file cannot be read or loaded.
 */
export function createEventBus(
  settings: Omit<EventBusSettings, keyof KafkaSecuritySettings> & KafkaSecuritySettings,
  deps: { log: Logger; catalogue: readonly CatalogueTopic[] },
): EventBus {
  if (!settings.KAFKA_BROKERS) {
    return createInProcessBus({ log: deps.log, partitions: settings.KAFKA_TOPIC_PARTITIONS, consumerMaxAttempts: settings.KAFKA_CONSUMER_MAX_ATTEMPTS });
  }
  return createKafkaBus({
    brokers: settings.KAFKA_BROKERS.split(','),
    clientId: settings.KAFKA_CLIENT_ID,
    security: kafkaSecurity(settings),
    log: deps.log,
    consumerMaxAttempts: settings.KAFKA_CONSUMER_MAX_ATTEMPTS,
    lagPollIntervalMs: settings.KAFKA_LAG_POLLING_INTERVAL,
    consumerSessionTimeoutMs: settings.KAFKA_CONSUMER_SESSION_TIMEOUT,
    topics: topicsToCreate(deps.catalogue, {
      prefix: settings.KAFKA_TOPIC_PREFIX,
      partitions: settings.KAFKA_TOPIC_PARTITIONS,
    }),
  });
}
