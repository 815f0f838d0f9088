import { CompressionTypes, Kafka } from 'kafkajs';
import type { BusHealth, ConsumerHandle, EventBus, TopicReader } from './bus.ts';
import { consumerMetrics } from './consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from './consumer-runner.ts';
import { EventBusUnavailableError } from './errors.ts';
import { createKafkaClients } from './kafka-clients.ts';
import { startKafkaConsumer } from './kafka-consumer.ts';
import { createKafkaFencedPublisher } from './kafka-fenced.ts';
import { openKafkaTopicReader } from './kafka-topic-reader.ts';
import { createLagPoller } from './kafka-lag.ts';
import { KAFKA_LOG_LEVEL, kafkaLogCreator } from './kafka-log.ts';
import { definedOf, KAFKA_BUS_DEFAULTS, type KafkaBusOptions } from './kafka-options.ts';
import { createPlatformaticBus } from './platformatic-bus.ts';
import { byTopic, chunkByBytes, createMissingTopics, isKafkaUnreachable } from './kafka-util.ts';

/** Longest stop() waits for the producer and the admin client to disconnect. */
const STOP_WAIT_MS = 2000;

export { KAFKA_BUS_DEFAULTS, type KafkaBusOptions, type KafkaClientName } from './kafka-options.ts';

/** The Kafka bus on the client `opts.client` names (kafkajs unless it says platformatic). */
export function createKafkaBus(opts: KafkaBusOptions): EventBus {
  return opts.client === 'platformatic' ? createPlatformaticBus(opts) : createKafkajsBus(opts);
}

function createKafkajsBus(opts: KafkaBusOptions): EventBus {
  const log = opts.log.child({ component: 'kafka-bus' });
  const o = { ...KAFKA_BUS_DEFAULTS, ...definedOf(opts) };
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
  /** What stop() ends: each consumer and each topic reader its caller has not closed (a failed replay). */
  const open = new Set<() => Promise<void>>();
  const keepTrack = (close: () => Promise<void>) => {
    const tracked = async () => {
      open.delete(tracked);
      await close();
    };
    open.add(tracked);
    return tracked;
  };
  const fenced = new Map<string, ReturnType<typeof createKafkaFencedPublisher>>();
  /** closing: no new consumers; stopped: no more sends (consumers may dead-letter until then). */
  let closing = false;
  let stopped = false;
  const lagPoller = createLagPoller({ admin: clients.admin, resetAdmin: clients.resetAdmin, intervalMs: o.lagPollIntervalMs, timeoutMs: o.requestTimeoutMs, log });
  const consumerWaits = { ...(o.consumerMaxWaitMs ? { maxWaitTimeInMs: o.consumerMaxWaitMs } : {}) };
  const consumerTimes = { ...consumerWaits, ...(o.consumerSessionTimeoutMs ? { sessionTimeoutMs: o.consumerSessionTimeoutMs } : {}) };

  const bus: EventBus = {
    kind: 'kafka',

    async start() {
      await bus.ensureTopics(o.topics ?? []);
      await clients.producer();
      log.info({ brokers: o.brokers.length, clientId: o.clientId }, 'kafka event bus started');
    },

    async ensureTopics(topics) {
      if (topics.length === 0) return;
      const created = await createMissingTopics(await clients.admin(), topics, o.requestTimeoutMs);
      if (created.length > 0) log.info({ topics: created }, 'kafka topics created');
    },

    async publish(messages) {
      if (messages.length === 0) return;
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

    fencedPublisher(name) {
      const transactionalId = `${o.clientId}.${name}`;
      let publisher = fenced.get(transactionalId);
      if (!publisher) {
        publisher = createKafkaFencedPublisher({ kafka, transactionalId, requestTimeoutMs: o.requestTimeoutMs, maxRequestBytes: o.maxRequestBytes, log, open: () => !stopped });
        fenced.set(transactionalId, publisher);
      }
      return publisher;
    },

    async subscribe(definition, runtime) {
      if (closing) throw new Error('event bus stopped');
      const consumer = resolveConsumer(definition, runtime.topicPrefix, { maxAttempts: o.consumerMaxAttempts });
      const metrics = consumerMetrics(runtime.registry);
      const processor = createMessageProcessor(consumer, { db: runtime.db, log: runtime.log, metrics, publish: (m) => bus.publish(m) });
      const running = await startKafkaConsumer({ kafka, processor, log: runtime.log, ...consumerTimes }).catch((err: unknown) => {
        clients.connectFailed(err);
        throw err;
      });
      const untrack = lagPoller.track({ name: consumer.name, topic: consumer.topic, physicalTopic: consumer.physicalTopic, groupId: consumer.groupId, metrics });
      const handle: ConsumerHandle = {
        name: running.name,
        stop: keepTrack(async () => {
          untrack();
          await running.stop();
        }),
      };
      return handle;
    },

    credentialsRefused: () => clients.refusal(),

    async openTopicReader(topic, groupId) {
      if (closing) throw new Error('event bus stopped');
      const reader = await openKafkaTopicReader({ kafka, admin: clients.admin, topic, groupId, log, ...consumerWaits });
      const tracked: TopicReader = { readToEnd: (onMessages) => reader.readToEnd(onMessages), close: keepTrack(() => reader.close()) };
      return tracked;
    },

    health: async (): Promise<BusHealth> => (closing ? 'down' : clients.health(o.healthTimeoutMs)),

    async stop() {
      if (closing) return;
      closing = true;
      await Promise.allSettled([...open].map((close) => close()));
      await lagPoller.stop();
      stopped = true;
      await Promise.all([clients.close(STOP_WAIT_MS), ...[...fenced.values()].map((f) => f.stop())]);
      log.info('kafka event bus stopped');
    },
  };
  return bus;
}
