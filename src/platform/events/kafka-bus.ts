import { CompressionTypes, Kafka, Partitioners, type Admin, type Producer } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import type { BusHealth, ConsumerHandle, EventBus, TopicReader, TopicSpec } from './bus.ts';
import { consumerMetrics } from './consumer-metrics.ts';
import { createMessageProcessor, resolveConsumer } from './consumer-runner.ts';
import { EventBusUnavailableError } from './errors.ts';
import { startKafkaConsumer } from './kafka-consumer.ts';
import { createKafkaFencedPublisher } from './kafka-fenced.ts';
import { openKafkaTopicReader } from './kafka-topic-reader.ts';
import { createLagPoller } from './kafka-lag.ts';
import { KAFKA_LOG_LEVEL, kafkaLogCreator } from './kafka-log.ts';
import { isKafkaCredentialFailure, type KafkaSecurity } from './kafka-security.ts';
import { byTopic, chunkByBytes, isKafkaUnreachable, waitForLeaders } from './kafka-util.ts';

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
  /** TCP connect timeout; short, so a dead broker shows up as 'down' at once. Default 1000. */
  connectionTimeoutMs?: number;
  /** Broker request timeout. Default 10000. */
  requestTimeoutMs?: number;
  /** Longest a health check waits. Default 2000. */
  healthTimeoutMs?: number;
  /**
   * Largest sum of key+value+header bytes per produce request; a bigger publish is split into
   * requests sent one after another (order kept). Must stay under the broker's
   * `message.max.bytes` (1 MiB by default), which bounds one partition's record batch.
   * Default 900,000.
   */
  maxRequestBytes?: number;
  /** kafkajs fetch long-poll of idle consumers; bounds stop and resume latency. Default 500. */
  consumerMaxWaitMs?: number;
  /**
   * Group session timeout: how long a member that died without leaving (SIGKILL) holds its
   * partitions. Default kafkajs's 30,000; the broker's group.min.session.timeout.ms (6,000) bounds it below.
   */
  consumerSessionTimeoutMs?: number;
  /** A consumer's maxAttempts unless it sets its own (KERNEL_TUNING.kafkaConsumerMaxAttempts). */
  consumerMaxAttempts?: number;
  /** How often consumer lag is read from the broker (KERNEL_TUNING.kafkaLagPollingIntervalMs). */
  lagPollIntervalMs?: number;
}

/** Longest stop() waits for the producer and the admin client to disconnect. */
const STOP_WAIT_MS = 2000;

export function createKafkaBus(opts: KafkaBusOptions): EventBus {
  const log = opts.log.child({ component: 'kafka-bus' });
  const requestTimeout = opts.requestTimeoutMs ?? 10_000;
  const maxRequestBytes = opts.maxRequestBytes ?? 900_000;
  const kafka = new Kafka({
    clientId: opts.clientId,
    brokers: [...opts.brokers],
    connectionTimeout: opts.connectionTimeoutMs ?? 1000,
    requestTimeout,
    // Connection-level retries only, kept short: the outbox publisher and the consumer runner
    // do their own retrying, so a dead broker must fail fast instead of hanging.
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 },
    logLevel: KAFKA_LOG_LEVEL,
    logCreator: kafkaLogCreator(log),
    ...opts.security,
  });
  const sasl = opts.security?.sasl;
  /** Named in the refusal's log line; never the password. */
  const credentials = {
    ssl: opts.security?.ssl !== undefined,
    ...(sasl ? { saslMechanism: sasl.mechanism, ...('username' in sasl ? { saslUsername: sasl.username } : {}) } : {}),
  };

  /** Set by a connect the brokers refused (bus.credentialsRefused()), cleared by the next one that succeeds. */
  let refusal: string | undefined;
  function connectSucceeded(): void {
    if (refusal === undefined) return;
    refusal = undefined;
    log.info(credentials, 'kafka accepts this replica\'s credentials again');
  }
  function connectFailed(err: unknown): void {
    if (!isKafkaCredentialFailure(err)) return;
    // Once per refusal, not per retry or health check; the bus start's own retries log each attempt.
    if (refusal === undefined) {
      log.error(
        { ...credentials, err },
        'kafka refused this replica: check KAFKA_SASL_MECHANISM / KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD (SASL) or KAFKA_SSL_CA_FILE (TLS); /health/ready is 503 until a connect succeeds',
      );
    }
    refusal = (err as Error).message;
  }

  let producer: Promise<Producer> | undefined;
  let admin: Promise<Admin> | undefined;
  const consumers = new Set<ConsumerHandle>();
  const readers = new Set<TopicReader>();
  const fenced = new Map<string, ReturnType<typeof createKafkaFencedPublisher>>();
  /** closing: no new consumers; stopped: no more sends (consumers may dead-letter until then). */
  let closing = false;
  let stopped = false;

  function currentProducer(): Promise<Producer> {
    if (stopped) return Promise.reject(new EventBusUnavailableError('event bus stopped'));
    if (producer) return producer;
    const p = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner, // murmur2, same partition as Java clients
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 },
    });
    const created: Promise<Producer> = p.connect().then(
      () => {
        connectSucceeded();
        return p;
      },
      async (err: unknown) => {
        connectFailed(err);
        if (producer === created) producer = undefined;
        await p.disconnect().catch(() => undefined);
        throw new EventBusUnavailableError(`kafka producer cannot connect: ${(err as Error).message}`, { cause: err });
      },
    );
    producer = created;
    return created;
  }

  /**
   * After a failed send kafkajs has rolled back the idempotent sequence numbers of every partition
   * in the request, including partitions the broker did accept; reusing the producer would then
   * hit OUT_OF_ORDER_SEQUENCE_NUMBER forever. A fresh producer gets a new producer id.
   */
  function retireProducer(p: Promise<Producer>): void {
    if (producer === p) producer = undefined;
    void p.then((x) => x.disconnect()).catch(() => undefined);
  }

  function currentAdmin(): Promise<Admin> {
    if (admin) return admin;
    const a = kafka.admin();
    const created: Promise<Admin> = a.connect().then(
      () => {
        connectSucceeded();
        return a;
      },
      (err: unknown) => {
        connectFailed(err);
        if (admin === created) admin = undefined;
        throw new EventBusUnavailableError(`kafka admin cannot connect: ${(err as Error).message}`, { cause: err });
      },
    );
    admin = created;
    return created;
  }

  function resetAdmin(): void {
    const a = admin;
    admin = undefined;
    void a?.then((x) => x.disconnect()).catch(() => undefined);
  }

  const lagPoller = createLagPoller({
    admin: currentAdmin,
    resetAdmin,
    intervalMs: opts.lagPollIntervalMs ?? 15_000,
    timeoutMs: requestTimeout,
    log,
  });

  const bus: EventBus = {
    kind: 'kafka',

    async start() {
      await bus.ensureTopics(opts.topics ?? []);
      await currentProducer();
      log.info({ brokers: opts.brokers.length, clientId: opts.clientId }, 'kafka event bus started');
    },

    async ensureTopics(topics) {
      if (topics.length === 0) return;
      const a = await currentAdmin();
      const existing = new Set(await a.listTopics());
      const missing = topics.filter((t) => !existing.has(t.name));
      if (missing.length === 0) return;
      // false = another replica created them first: fine. kafkajs's own waitForLeaders gives up
      // on UNKNOWN_TOPIC_OR_PARTITION, which a KRaft broker answers until its metadata catches up.
      await a.createTopics({
        waitForLeaders: false,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          ...(t.configEntries ? { configEntries: t.configEntries } : {}),
        })),
      });
      await waitForLeaders(a, missing.map((t) => t.name), requestTimeout);
      log.info({ topics: missing.map((t) => t.name) }, 'kafka topics created');
    },

    async publish(messages) {
      if (messages.length === 0) return;
      const pending = currentProducer();
      const p = await pending;
      try {
        for (const chunk of chunkByBytes(messages, maxRequestBytes)) {
          await p.sendBatch({ topicMessages: byTopic(chunk), acks: -1, compression: CompressionTypes.None, timeout: requestTimeout });
        }
      } catch (err) {
        retireProducer(pending);
        if (isKafkaUnreachable(err)) {
          throw new EventBusUnavailableError(`kafka unreachable: ${(err as Error).message}`, { cause: err });
        }
        throw err;
      }
    },

    fencedPublisher(name) {
      const transactionalId = `${opts.clientId}.${name}`;
      let publisher = fenced.get(transactionalId);
      if (!publisher) {
        publisher = createKafkaFencedPublisher({ kafka, transactionalId, requestTimeoutMs: requestTimeout, maxRequestBytes, log, open: () => !stopped });
        fenced.set(transactionalId, publisher);
      }
      return publisher;
    },

    async subscribe(definition, runtime) {
      if (closing) throw new Error('event bus stopped');
      const consumer = resolveConsumer(definition, runtime.topicPrefix, { maxAttempts: opts.consumerMaxAttempts });
      const metrics = consumerMetrics(runtime.registry);
      const processor = createMessageProcessor(consumer, {
        db: runtime.db,
        log: runtime.log,
        metrics,
        publish: (m) => bus.publish(m),
      });
      const running = await startKafkaConsumer({
        kafka,
        processor,
        log: runtime.log,
        ...(opts.consumerMaxWaitMs ? { maxWaitTimeInMs: opts.consumerMaxWaitMs } : {}),
        ...(opts.consumerSessionTimeoutMs ? { sessionTimeoutMs: opts.consumerSessionTimeoutMs } : {}),
      }).catch((err: unknown) => {
        connectFailed(err);
        throw err;
      });
      const untrack = lagPoller.track({ name: consumer.name, topic: consumer.topic, physicalTopic: consumer.physicalTopic, groupId: consumer.groupId, metrics });
      const handle: ConsumerHandle = {
        name: running.name,
        stop: async () => {
          consumers.delete(handle);
          untrack();
          await running.stop();
        },
      };
      consumers.add(handle);
      return handle;
    },

    credentialsRefused: () => refusal,

    async openTopicReader(topic, groupId) {
      if (closing) throw new Error('event bus stopped');
      const reader = await openKafkaTopicReader({ kafka, admin: currentAdmin, topic, groupId, log, ...(opts.consumerMaxWaitMs ? { maxWaitTimeInMs: opts.consumerMaxWaitMs } : {}) });
      // Tracked so stop() ends a reader its caller never closed (a failed replay) instead of leaving its consumer running.
      const tracked: TopicReader = {
        readToEnd: (onMessages) => reader.readToEnd(onMessages),
        close: async () => {
          readers.delete(tracked);
          await reader.close();
        },
      };
      readers.add(tracked);
      return tracked;
    },

    async health(): Promise<BusHealth> {
      if (closing) return 'down';
      try {
        await withTimeout(
          currentAdmin().then((a) => a.describeCluster()),
          opts.healthTimeoutMs ?? 2000,
          'kafka health check',
        );
        return 'ok';
      } catch {
        resetAdmin(); // the next check starts from a fresh connection
        return 'down';
      }
    },

    async stop() {
      if (closing) return;
      closing = true;
      await Promise.allSettled([...[...consumers].map((c) => c.stop()), ...[...readers].map((r) => r.close())]);
      await lagPoller.stop();
      stopped = true;
      const p = producer;
      producer = undefined;
      const a = admin;
      admin = undefined;
      // A connect still in flight to a silent broker can take retries × requestTimeout: shutdown
      // does not wait for it (the process is about to exit; the half-open socket dies with it).
      const disconnect = (c: Promise<Producer | Admin> | undefined, what: string) =>
        c ? withTimeout(c.then((x) => x.disconnect()), STOP_WAIT_MS, `kafka ${what} disconnect`).catch(() => undefined) : undefined;
      await Promise.all([disconnect(p, 'producer'), disconnect(a, 'admin'), ...[...fenced.values()].map((f) => f.stop())]);
      log.info('kafka event bus stopped');
    },
  };
  return bus;
}
