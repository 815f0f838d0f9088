import type { BusHealth, ConsumerHandle, EventBus, TopicReader } from './bus.ts';
import { consumerMetrics } from './consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from './consumer-runner.ts';
import { EventBusUnavailableError } from './errors.ts';
import { createLagPoller } from './kafka-lag.ts';
import { definedOf, KAFKA_BUS_DEFAULTS, type KafkaBusOptions } from './kafka-options.ts';
import { chunkByBytes, isKafkaUnreachable } from './kafka-util.ts';
import { createMissingTopics, lagAdmin } from './platformatic-admin.ts';
import { createPlatformaticClients, toRecords, type PlatformaticConnection } from './platformatic-clients.ts';
import { startPlatformaticConsumer } from './platformatic-consumer.ts';
import { createPlatformaticFencedPublisher } from './platformatic-fenced.ts';
import { openPlatformaticTopicReader } from './platformatic-reader.ts';

/** Longest stop() waits for the producer and the admin client to close. */
const STOP_WAIT_MS = 2000;

/**
 * The Kafka bus on @platformatic/kafka (KAFKA_CLIENT=platformatic): the same port, options and
 * behaviour as kafka-bus.ts's kafkajs bus, one file per part (platformatic-*.ts).
 */
export function createPlatformaticBus(opts: KafkaBusOptions): EventBus {
  const log = opts.log.child({ component: 'kafka-bus' });
  const o = { ...KAFKA_BUS_DEFAULTS, ...definedOf(opts) };
  const connection: PlatformaticConnection = {
    clientId: o.clientId,
    brokers: o.brokers,
    connectionTimeoutMs: o.connectionTimeoutMs,
    requestTimeoutMs: o.requestTimeoutMs,
    security: o.security,
  };
  const clients = createPlatformaticClients(connection, log);
  const open = new Set<() => Promise<void>>();
  const keepTrack = (close: () => Promise<void>) => {
    const tracked = async () => {
      open.delete(tracked);
      await close();
    };
    open.add(tracked);
    return tracked;
  };
  const fenced = new Map<string, ReturnType<typeof createPlatformaticFencedPublisher>>();
  let closing = false;
  let stopped = false;
  const lagPoller = createLagPoller({ admin: () => clients.admin().then(lagAdmin), resetAdmin: clients.resetAdmin, intervalMs: o.lagPollIntervalMs, timeoutMs: o.requestTimeoutMs, log });
  const consumerWaits = { ...(o.consumerMaxWaitMs ? { maxWaitTimeInMs: o.consumerMaxWaitMs } : {}) };

  const bus: EventBus = {
    kind: 'kafka',

    async start() {
      await bus.ensureTopics(o.topics ?? []);
      await clients.producer();
      log.info({ brokers: o.brokers.length, clientId: o.clientId, client: 'platformatic' }, 'kafka event bus started');
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
        for (const chunk of chunkByBytes(messages, o.maxRequestBytes)) await p.send({ messages: toRecords(chunk), acks: -1 });
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
        publisher = createPlatformaticFencedPublisher({ connection, transactionalId, maxRequestBytes: o.maxRequestBytes, log, open: () => !stopped });
        fenced.set(transactionalId, publisher);
      }
      return publisher;
    },

    async subscribe(definition, runtime) {
      if (closing) throw new Error('event bus stopped');
      const consumer = resolveConsumer(definition, runtime.topicPrefix, { maxAttempts: o.consumerMaxAttempts });
      const metrics = consumerMetrics(runtime.registry);
      const processor = createMessageProcessor(consumer, { db: runtime.db, log: runtime.log, metrics, publish: (m) => bus.publish(m) });
      const running = await startPlatformaticConsumer({
        connection,
        processor,
        log: runtime.log,
        ...consumerWaits,
        ...(o.consumerSessionTimeoutMs ? { sessionTimeoutMs: o.consumerSessionTimeoutMs } : {}),
      }).catch((err: unknown) => {
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
      const reader = await openPlatformaticTopicReader({ connection, admin: clients.admin, topic, groupId, log, ...consumerWaits });
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
