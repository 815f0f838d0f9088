import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import { Admin, compatibilityPartitioner, Consumer, Producer, type BaseOptions, type MessageToProduce } from '@platformatic/kafka';
import { createMissingTopics, topicOffsets } from '../../src/platform/events/platformatic-admin.ts';
import { testAdmin, type TestAdmin } from './kafka-admin.ts';

/**
 * Kafka for one test file: the broker started by `npm test` (KAFKA_BROKERS), a unique topic
 * prefix so files running in parallel never share topics or consumer groups, helpers to create
 * topics, produce raw messages and read what a topic holds, and cleanup at file end. The tests'
 * own clients are @platformatic/kafka's, as the service's are.
 */

export type { TestAdmin } from './kafka-admin.ts';

export function kafkaBrokers(): string[] {
  const brokers = process.env.KAFKA_BROKERS;
  if (!brokers) throw new Error('KAFKA_BROKERS is unset: run the tests with `npm test` (it starts Kafka)');
  return brokers.split(',');
}

/** A raw message a test produces: key, value and headers as text or bytes, a partition if it picks one (else Java's murmur2 of the key). */
export interface Message {
  key?: string | Buffer | null;
  /** null: a tombstone (no value). */
  value: string | Buffer | null;
  partition?: number;
  /** A list: the header once per value; undefined: left out. */
  headers?: Record<string, string | Buffer | (string | Buffer)[] | undefined>;
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
  /** Connection options (brokers, SASL) for a test's own @platformatic/kafka client. */
  clientOptions: BaseOptions;
  admin: TestAdmin;
  /** The physical name of a product topic in this file. */
  topic(name: string): string;
  /** Creates prefixed topics (names given without the prefix). */
  createTopics(topics: { name: string; partitions?: number; configEntries?: { name: string; value: string }[] }[]): Promise<void>;
  /** Produces raw messages to a physical topic (explicit partitions allowed). */
  produce(topic: string, messages: Message[]): Promise<void>;
  /** Waits until at least `count` messages are in the topic, then returns everything it holds. */
  readTopic(topic: string, opts?: { atLeast?: number; timeoutMs?: number }): Promise<ReadMessage[]>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bytes = (v: string | Buffer): Buffer => (typeof v === 'string' ? Buffer.from(v) : v);

/** A test's messages as the library sends them: Buffers throughout (its serialisers are the identity). */
function toRecords(topic: string, messages: Message[]): MessageToProduce[] {
  return messages.map((m) => {
    // A Map of Buffers: header names given as an object's string keys reach the encoder unconverted.
    const headers = new Map<Buffer, Buffer>();
    // Keys are distinct Buffers, so a name may repeat.
    for (const [name, value] of Object.entries(m.headers ?? {})) for (const one of [value ?? []].flat()) headers.set(Buffer.from(name), bytes(one));
    return {
      topic,
      ...(m.key === null || m.key === undefined ? {} : { key: bytes(m.key) }),
      ...(m.partition === undefined ? {} : { partition: m.partition }),
      value: (m.value === null ? undefined : bytes(m.value)) as Buffer,
      headers,
    };
  });
}

/** Header names and values as text; of a name given twice the first value. */
function headerText(entries: [Buffer, Buffer][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of entries) out[k.toString()] ??= v.toString();
  return out;
}

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

export interface TestSasl {
  mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  username: string;
  password: string;
}

/** `brokers`/`sasl`: another listener than KAFKA_BROKERS (e.g. the SASL one); default the plaintext one. */
export async function createTestKafka(opts: { brokers?: string[]; sasl?: TestSasl } = {}): Promise<TestKafka> {
  const brokers = opts.brokers ?? kafkaBrokers();
  const prefix = `t${randomBytes(4).toString('hex')}.`;
  const sasl = opts.sasl;
  const clientOptions: BaseOptions = {
    clientId: `test-${prefix}`,
    bootstrapBrokers: brokers,
    connectTimeout: 3000,
    ...(sasl ? { sasl: { mechanism: sasl.mechanism.toUpperCase() as 'PLAIN', username: sasl.username, password: sasl.password } } : {}),
  };
  const rawAdmin = new Admin(clientOptions);
  // The library connects on first use: a first request, so a broker that is not there fails here as before.
  await rawAdmin.metadata({ topics: [], forceUpdate: true });
  const admin = testAdmin(rawAdmin);
  let producer: Producer | undefined;

  after(async () => {
    // Best effort: a cleanup hiccup on the shared broker must not fail the file's tests.
    await producer?.close(true).catch(() => undefined);
    const topics = (await rawAdmin.listTopics().catch(() => [] as string[])).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await rawAdmin.deleteTopics({ topics }).catch(() => undefined);
    const groups = (await admin.listGroups().catch(() => ({ groups: [] as { groupId: string }[] }))).groups
      .map((g) => g.groupId)
      .filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await rawAdmin.deleteGroups({ groups }).catch(() => undefined);
    await rawAdmin.close().catch(() => undefined);
  });

  /**
   * Every committed message of the topic up to the partitions' current ends, read committed (as the
   * service's consumers read) by a member of a throwaway group. A partition is read to its end when
   * the consumer's next fetch offset, which passes transaction markers, reaches its high watermark
   * and nothing it fetched is still waiting in the stream.
   */
  async function readToEnd(topic: string, deadline: number): Promise<ReadMessage[]> {
    const ends = new Map<number, bigint>();
    for (const p of await topicOffsets(rawAdmin, topic)) if (BigInt(p.high) > BigInt(p.low)) ends.set(p.partition, BigInt(p.high));
    const out = new Map<string, ReadMessage>();
    if (ends.size === 0) return [];
    const groupId = `${prefix}read-${randomBytes(4).toString('hex')}`;
    const consumer = new Consumer({ ...clientOptions, groupId, autocommit: false, maxWaitTime: 200 });
    let failure: unknown;
    consumer.on('error', (err: Error) => (failure ??= err));
    try {
      const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 200 });
      stream.on('error', (err: Error) => (failure ??= err));
      stream.on('data', (m) => {
        // Keyed by position: a rebalance of the group (nothing is committed) would hand a record over again.
        out.set(`${m.partition}:${m.offset}`, {
          topic,
          partition: m.partition,
          offset: String(m.offset),
          key: m.key?.toString() ?? null,
          value: m.value ?? null,
          headers: headerText(m.headerEntries),
        });
      });
      const reached = (p: number) => stream.readableLength === 0 && (stream.offsetsToFetch.get(`${topic}:${p}`) ?? 0n) >= ends.get(p)!;
      while (![...ends.keys()].every(reached)) {
        if (failure !== undefined) throw failure;
        if (Date.now() > deadline) throw new Error(`${topic}: read ${out.size} messages, not to the end in time`);
        await sleep(20);
      }
      await stream.close().catch(() => undefined);
    } finally {
      await consumer.close(true).catch(() => undefined);
      await rawAdmin.deleteGroups({ groups: [groupId] }).catch(() => undefined);
    }
    // Kafka orders per partition only; sort for stable assertions.
    return [...out.values()].sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
  }

  async function messageCount(topic: string): Promise<number> {
    // A topic created moments ago may still answer NOT_LEADER while its leaders settle: ask again.
    for (let attempt = 1; ; attempt++) {
      try {
        const offsets = await topicOffsets(rawAdmin, topic);
        return offsets.reduce((n, p) => n + (Number(p.high) - Number(p.low)), 0);
      } catch (err) {
        if (attempt >= 40) throw err;
        await sleep(50);
      }
    }
  }

  return {
    brokers,
    prefix,
    clientOptions,
    admin,
    topic: (name) => `${prefix}${name}`,

    async createTopics(topics) {
      await createMissingTopics(
        rawAdmin,
        topics.map((t) => ({ name: `${prefix}${t.name}`, partitions: t.partitions ?? 6, ...(t.configEntries ? { configEntries: t.configEntries } : {}) })),
        10_000,
      );
    },

    async produce(topic, messages) {
      // Idempotent: a send the library retries must not write its records twice, or a test counting
      // what it produced reads duplicates the code did not make. Java's murmur2 partitions, as the service's producer.
      producer ??= new Producer({ ...clientOptions, idempotent: true, partitioner: compatibilityPartitioner });
      await producer.send({ messages: toRecords(topic, messages) });
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
        const out = await readToEnd(topic, Math.max(deadline, Date.now() + 1000));
        if (out.length >= want) return out;
        if (Date.now() > deadline) throw new Error(`${topic}: read ${out.length} of ${want} messages in time`);
        await sleep(100);
      }
    },
  };
}
