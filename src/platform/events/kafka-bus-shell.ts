import { EVENTS_DEFAULTS } from './defaults.ts';
import type { Logger } from '../observability/logger.ts';
import type { BusHealth, ConsumerHandle, EventBus, FencedPublisher, OutgoingMessage, TopicReader, TopicSpec } from './bus.ts';
import { consumerMetrics } from './consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer, type MessageProcessor } from './consumer-runner.ts';
import { createLagPoller, type LagAdmin } from './kafka-lag.ts';
import type { KafkaClientName, ResolvedKafkaBusOptions } from './kafka-options.ts';

/**
 * The Kafka bus's one shape, whichever client runs it: the port's bookkeeping (consumers and readers
 * to end at stop, one fenced publisher per transactional.id, lag polling, the stop order) over a
 * driver that does the client's own work (kafka-bus.ts for kafkajs, platformatic-bus.ts).
 */
export interface KafkaDriver {
  client: KafkaClientName;
  /** Creates the missing topics; the names created. */
  createTopics(topics: readonly TopicSpec[]): Promise<string[]>;
  /** Connects the shared producer (start's check that the brokers answer). */
  connect(): Promise<void>;
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
  fenced(transactionalId: string, open: () => boolean): FencedPublisher & { stop(): Promise<void> };
  startConsumer(processor: MessageProcessor, log: Logger): Promise<ConsumerHandle>;
  openTopicReader(topic: string, groupId: string): Promise<TopicReader>;
  lagAdmin(): Promise<LagAdmin>;
  resetAdmin(): void;
  /** Call with a consumer's start error: a credential refusal is remembered. */
  connectFailed(err: unknown): void;
  refusal(): string | undefined;
  health(timeoutMs: number): Promise<BusHealth>;
  /** The shared producer and admin client close, waiting at most `waitMs`. */
  close(waitMs: number): Promise<void>;
}


export function kafkaBusOn(driver: KafkaDriver, o: ResolvedKafkaBusOptions, log: Logger): EventBus {
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
  const fenced = new Map<string, FencedPublisher & { stop(): Promise<void> }>();
  /** closing: no new consumers; stopped: no more sends (consumers may dead-letter until then). */
  let closing = false;
  let stopped = false;
  const lagPoller = createLagPoller({ admin: driver.lagAdmin, resetAdmin: driver.resetAdmin, intervalMs: o.lagPollIntervalMs, timeoutMs: o.requestTimeoutMs, log });

  const bus: EventBus = {
    kind: 'kafka',

    async start() {
      await bus.ensureTopics(o.topics ?? []);
      await driver.connect();
      log.info({ brokers: o.brokers.length, clientId: o.clientId, client: driver.client }, 'kafka event bus started');
    },

    async ensureTopics(topics) {
      if (topics.length === 0) return;
      const created = await driver.createTopics(topics);
      if (created.length > 0) log.info({ topics: created }, 'kafka topics created');
    },

    async publish(messages) {
      if (messages.length > 0) await driver.publish(messages);
    },

    fencedPublisher(name) {
      const transactionalId = `${o.clientId}.${name}`;
      let publisher = fenced.get(transactionalId);
      if (!publisher) fenced.set(transactionalId, (publisher = driver.fenced(transactionalId, () => !stopped)));
      return publisher;
    },

    async subscribe(definition, runtime) {
      if (closing) throw new Error('event bus stopped');
      const consumer = resolveConsumer(definition, runtime.topicPrefix, { maxAttempts: o.consumerMaxAttempts });
      const metrics = consumerMetrics(runtime.registry);
      const processor = createMessageProcessor(consumer, { db: runtime.db, log: runtime.log, metrics, publish: (m) => bus.publish(m) });
      const running = await driver.startConsumer(processor, runtime.log).catch((err: unknown) => {
        driver.connectFailed(err);
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

    credentialsRefused: () => driver.refusal(),

    async openTopicReader(topic, groupId) {
      if (closing) throw new Error('event bus stopped');
      const reader = await driver.openTopicReader(topic, groupId);
      const tracked: TopicReader = { readToEnd: (onMessages) => reader.readToEnd(onMessages), close: keepTrack(() => reader.close()) };
      return tracked;
    },

    health: async (): Promise<BusHealth> => (closing ? 'down' : driver.health(o.healthTimeoutMs)),

    async stop() {
      if (closing) return;
      closing = true;
      await Promise.allSettled([...open].map((close) => close()));
      await lagPoller.stop();
      stopped = true;
      await Promise.all([driver.close(EVENTS_DEFAULTS.kafkaStopWaitMs), ...[...fenced.values()].map((f) => f.stop())]);
      log.info('kafka event bus stopped');
    },
  };
  return bus;
}
