import { CompressionTypes, Kafka } from 'kafkajs';
import type { EventBus } from './bus.ts';
import { EventBusUnavailableError } from './errors.ts';
import { kafkaBusOn } from './kafka-bus-shell.ts';
import { createKafkaClients } from './kafka-clients.ts';
import { startKafkaConsumer } from './kafka-consumer.ts';
import { createKafkaFencedPublisher } from './kafka-fenced.ts';
import { openKafkaTopicReader } from './kafka-topic-reader.ts';
import { KAFKA_LOG_LEVEL, kafkaLogCreator } from './kafka-log.ts';
import { resolveKafkaBusOptions, type KafkaBusOptions } from './kafka-options.ts';
import { createPlatformaticBus } from './platformatic-bus.ts';
import { byTopic, chunkByBytes, createMissingTopics, isKafkaUnreachable } from './kafka-util.ts';

export { KAFKA_BUS_DEFAULTS, type KafkaBusOptions, type KafkaClientName } from './kafka-options.ts';

/** The Kafka bus on the client `opts.client` names (kafkajs unless it says platformatic). */
export function createKafkaBus(opts: KafkaBusOptions): EventBus {
  return opts.client === 'platformatic' ? createPlatformaticBus(opts) : createKafkajsBus(opts);
}

/** The bus on kafkajs: one Kafka instance for the producer, every consumer and the admin client. */
function createKafkajsBus(opts: KafkaBusOptions): EventBus {
  const log = opts.log.child({ component: 'kafka-bus' });
  const o = resolveKafkaBusOptions(opts);
  const kafka = new Kafka({
    clientId: o.clientId,
    brokers: [...o.brokers],
    connectionTimeout: o.connectionTimeoutMs,
    requestTimeout: o.requestTimeoutMs,
    // Connection-level retries only, kept short: the outbox publisher and the consumer runner
    // do their own retrying, so a dead broker must fail fast instead of hanging.
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 },
    logLevel: KAFKA_LOG_LEVEL,
    logCreator: kafkaLogCreator(log),
    ...o.security,
  });
  const clients = createKafkaClients(kafka, o.security, log);
  const consumerWaits = { ...(o.consumerMaxWaitMs ? { maxWaitTimeInMs: o.consumerMaxWaitMs } : {}) };
  const consumerTimes = { ...consumerWaits, ...(o.consumerSessionTimeoutMs ? { sessionTimeoutMs: o.consumerSessionTimeoutMs } : {}) };

  return kafkaBusOn(
    {
      client: 'kafkajs',
      createTopics: async (topics) => createMissingTopics(await clients.admin(), topics, o.requestTimeoutMs),
      connect: async () => void (await clients.producer()),
      async publish(messages) {
        const pending = clients.producer();
        const p = await pending;
        try {
          for (const chunk of chunkByBytes(messages, o.maxRequestBytes)) {
            await p.sendBatch({ topicMessages: byTopic(chunk), acks: -1, compression: CompressionTypes.None, timeout: o.requestTimeoutMs });
          }
        } catch (err) {
          clients.retireProducer(pending);
          if (isKafkaUnreachable(err)) throw new EventBusUnavailableError(`kafka unreachable: ${(err as Error).message}`, { cause: err });
          throw err;
        }
      },
      fenced: (transactionalId, open) => createKafkaFencedPublisher({ kafka, transactionalId, requestTimeoutMs: o.requestTimeoutMs, maxRequestBytes: o.maxRequestBytes, log, open }),
      startConsumer: (processor, consumerLog) => startKafkaConsumer({ kafka, processor, log: consumerLog, ...consumerTimes }),
      openTopicReader: (topic, groupId) => openKafkaTopicReader({ kafka, admin: clients.admin, topic, groupId, log, ...consumerWaits }),
      lagAdmin: clients.admin,
      resetAdmin: clients.resetAdmin,
      connectFailed: clients.connectFailed,
      refusal: clients.refusal,
      health: (timeoutMs) => clients.health(timeoutMs),
      close: (waitMs) => clients.close(waitMs),
    },
    o,
    log,
  );
}
