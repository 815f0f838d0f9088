import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Admin, type IHeaders, type Message, type Producer, type SASLOptions } from 'kafkajs';
import { waitForLeaders } from '../../src/platform/events/kafka-util.ts';

/**
 * Kafka for one test file: the broker started by `npm test` (KAFKA_BROKERS), a unique topic
 * prefix so files running in parallel never share topics or consumer groups, helpers to create
 * topics, produce raw messages and read what a topic holds, and cleanup at file end.
 */

export { testKafkaClient } from './kafka-client.ts';

export function kafkaBrokers(): string[] {
  const brokers = process.env.KAFKA_BROKERS;
  if (!brokers) throw new Error('KAFKA_BROKERS is unset: run the tests with `npm test` (it starts Kafka)');
  return brokers.split(',');
}

export interface ReadMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

export interface TestKafka {
  brokers: string[];
  /** e.g. `t3fa9c1d2.`; put before every topic and group name of the file. */
  prefix: string;
  kafka: Kafka;
  admin: Admin;
  /** The physical name of a product topic in this file. */
  topic(name: string): string;
  /** Creates prefixed topics (names given without the prefix). */
  createTopics(topics: { name: string; partitions?: number; configEntries?: { name: string; value: string }[] }[]): Promise<void>;
  /** Produces raw messages to a physical topic (explicit partitions allowed). */
  produce(topic: string, messages: Message[]): Promise<void>;
  /** Waits until at least `count` messages are in the topic, then returns everything it holds. */
  readTopic(topic: string, opts?: { atLeast?: number; timeoutMs?: number }): Promise<ReadMessage[]>;
}

const headerText = (headers: IHeaders | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    const one = Array.isArray(v) ? v[0] : v;
    if (one !== undefined) out[k] = one.toString();
  }
  return out;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The local broker's SASL listener (scripts/kafka.sh) and its one user, for tests of the client's SASL settings. */
export function kafkaSaslBroker(): { brokers: string[]; username: string; password: string } {
  const brokers = process.env.KAFKA_SASL_BROKERS;
  if (!brokers) {
    throw new Error(
      'KAFKA_SASL_BROKERS is unset: the broker was started by a scripts/kafka.sh without the SASL listener, or on a data dir from before it (`scripts/services.sh down`, then run the tests again)',
    );
  }
  return { brokers: brokers.split(','), username: process.env.KAFKA_SCRAM_USER ?? 'pin', password: process.env.KAFKA_SCRAM_PASSWORD ?? 'pin-local-secret' };
}

/** `brokers`/`sasl`: another listener than KAFKA_BROKERS (e.g. the SASL one); default the plaintext one. */
export async function createTestKafka(opts: { brokers?: string[]; sasl?: SASLOptions } = {}): Promise<TestKafka> {
  const brokers = opts.brokers ?? kafkaBrokers();
  const prefix = `t${randomBytes(4).toString('hex')}.`;
  const kafka = new Kafka({
    clientId: `test-${prefix}`,
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    ...(opts.sasl ? { sasl: opts.sasl } : {}),
  });
  const admin = kafka.admin();
  await admin.connect();
  let producer: Producer | undefined;

  after(async () => {
    // Best effort: a cleanup hiccup on the shared broker must not fail the file's tests.
    await producer?.disconnect().catch(() => undefined);
    const topics = (await admin.listTopics().catch(() => [] as string[])).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics }).catch(() => undefined);
    const groups = (await admin.listGroups().catch(() => ({ groups: [] as { groupId: string }[] }))).groups
      .map((g) => g.groupId)
      .filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  });

  /** Sum of (high watermark − low) over partitions: how many messages the topic holds now. */
  /**
   * Every committed message of the topic up to the partitions' current ends, read committed (as the
   * service's consumers read). A partition is read to its end when a processed batch's last offset,
   * transaction markers included, reaches its high watermark.
   */
  async function readToEnd(topic: string, deadline: number): Promise<ReadMessage[]> {
    const ends = new Map<number, number>();
    for (const p of await admin.fetchTopicOffsets(topic)) if (Number(p.high) > Number(p.low)) ends.set(p.partition, Number(p.high) - 1);
    const out: ReadMessage[] = [];
    if (ends.size === 0) return out;
    const consumer = kafka.consumer({ groupId: `${prefix}read-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 200 });
    const done = Promise.withResolvers<void>();
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      const end = ends.get(payload.partition);
      if (end !== undefined && Number(payload.lastOffset) >= end) ends.delete(payload.partition);
      if (ends.size === 0) done.resolve();
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    consumer
      .run({
        eachMessage: async ({ partition, message }) => {
          out.push({
            topic,
            partition,
            offset: message.offset,
            key: message.key?.toString() ?? null,
            value: message.value,
            headers: headerText(message.headers),
          });
        },
      })
      .catch(done.reject);
    const timeout = new Promise<void>((_, reject) =>
      setTimeout(() => reject(new Error(`${topic}: read ${out.length} messages, not to the end in time`)), Math.max(1000, deadline - Date.now())).unref(),
    );
    try {
      await Promise.race([done.promise, timeout]);
    } finally {
      await consumer.disconnect();
    }
    // Kafka orders per partition only; sort for stable assertions.
    return out.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
  }

  async function messageCount(topic: string): Promise<number> {
    // A topic created moments ago may still answer NOT_LEADER while its leaders settle: ask again.
    for (let attempt = 1; ; attempt++) {
      try {
        const offsets = await admin.fetchTopicOffsets(topic);
        return offsets.reduce((n, p) => n + (Number(p.high) - Number(p.low)), 0);
      } catch (err) {
        if (!(err as { retriable?: boolean }).retriable || attempt >= 40) throw err;
        await sleep(50);
      }
    }
  }

  return {
    brokers,
    prefix,
    kafka,
    admin,
    topic: (name) => `${prefix}${name}`,

    async createTopics(topics) {
      await admin.createTopics({
        waitForLeaders: false,
        topics: topics.map((t) => ({
          topic: `${prefix}${t.name}`,
          numPartitions: t.partitions ?? 6,
          ...(t.configEntries ? { configEntries: t.configEntries } : {}),
        })),
      });
      await waitForLeaders(admin, topics.map((t) => `${prefix}${t.name}`), 10_000);
    },

    async produce(topic, messages) {
      if (!producer) {
        // Idempotent: a send kafkajs retries (the first one to a new topic often is) must not write its
        // records twice, or a test counting what it produced reads duplicates the code did not make.
        producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 });
        await producer.connect();
      }
      await producer.send({ topic, messages, acks: -1 });
    },

    async readTopic(topic, opts = {}) {
      const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
      const want = opts.atLeast ?? 0;
      // Offsets count transaction markers too (the outbox publisher sends in transactions), so they
      // only gate the first read; a read that found fewer messages than wanted is tried again.
      let total = await messageCount(topic);
      while (total < want) {
        if (Date.now() > deadline) throw new Error(`${topic}: ${total} messages, expected at least ${want}`);
        await sleep(50);
        total = await messageCount(topic);
      }
      for (;;) {
        const out = await readToEnd(topic, deadline);
        if (out.length >= want) return out;
        if (Date.now() > deadline) throw new Error(`${topic}: read ${out.length} of ${want} messages in time`);
        await sleep(100);
      }
    },
  };
}

