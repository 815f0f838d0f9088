import { CompressionTypes, Kafka } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import type { BusHealth, ConsumerHandle, EventBus, TopicReader, TopicSpec } from './bus.ts';
import { consumerMetrics } from './consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from './consumer-runner.ts';
import { EventBusUnavailableError } from './errors.ts';
import { createKafkaClients } from './kafka-clients.ts';
import { startKafkaConsumer } from './kafka-consumer.ts';
import { createKafkaFencedPublisher } from './kafka-fenced.ts';
import { openKafkaTopicReader } from './kafka-topic-reader.ts';
import { createLagPoller } from './kafka-lag.ts';
import { KAFKA_LOG_LEVEL, kafkaLogCreator } from './kafka-log.ts';
import type { KafkaSecurity } from './kafka-security.ts';
import { byTopic, chunkByBytes, createMissingTopics, isKafkaUnreachable } from './kafka-util.ts';
import { EVENTS_DEFAULTS } from './defaults.ts';

export interface KafkaBusOptions {
  /** host:port list (KAFKA_BROKERS). */
  brokers: readonly string[];
  /** KAFKA_CLIENT_ID. */
  clientId: string;
  /** TLS and SASL (`kafkaSecurity(settings)`), used by the producer, every consumer and the admin client alike. */
  security?: KafkaSecurity;
  log: Logger;
  /** Created at start if missing: `topicsToCreate(EVENT_TOPICS, …)`. Default none. */
  topics?: readonly TopicSpec[];
  /** TCP connect timeout; short, so a dead broker shows up as 'down' at once. */
  connectionTimeoutMs?: number;
  /** Broker request timeout. */
  requestTimeoutMs?: number;
  /** Longest a health check waits. */
  healthTimeoutMs?: number;
  /**
   * Largest sum of key+value+header bytes per produce request; a bigger publish is split into
   * requests sent one after another (order kept). Must stay under the broker's
   * `message.max.bytes` (1 MiB by default), which bounds one partition's record batch.
   */
  maxRequestBytes?: number;
  /** kafkajs fetch long-poll of idle consumers; bounds stop and resume latency (kafka-consumer.ts's default when unset). */
  consumerMaxWaitMs?: number;
  /**
   * Group session timeout: how long a member that died without leaving (SIGKILL) holds its
   * partitions. Default kafkajs's 30,000; the broker's group.min.session.timeout.ms (6,000) bounds it below.
   */
  consumerSessionTimeoutMs?: number;
  /** A consumer's maxAttempts unless it sets its own (EVENTS_DEFAULTS.kafkaConsumerMaxAttempts). */
  consumerMaxAttempts?: number;
  /** How often consumer lag is read from the broker (EVENTS_DEFAULTS.kafkaLagPollingIntervalMs). */
  lagPollIntervalMs?: number;
}

/** The options' values when unset. */
export const KAFKA_BUS_DEFAULTS = {
  connectionTimeoutMs: EVENTS_DEFAULTS.kafkaConnectionTimeoutMs,
  requestTimeoutMs: EVENTS_DEFAULTS.kafkaRequestTimeoutMs,
  healthTimeoutMs: EVENTS_DEFAULTS.kafkaHealthTimeoutMs,
  maxRequestBytes: EVENTS_DEFAULTS.kafkaMaxRequestBytes,
  lagPollIntervalMs: EVENTS_DEFAULTS.kafkaLagPollingIntervalMs,
} as const;

export function createKafkaBus(opts: KafkaBusOptions): EventBus {
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
      await Promise.all([clients.close(EVENTS_DEFAULTS.kafkaStopWaitMs), ...[...fenced.values()].map((f) => f.stop())]);
      log.info('kafka event bus stopped');
    },
  };
  return bus;
}

/** The options given, without the keys set to undefined (which would hide a default). */
function definedOf<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
