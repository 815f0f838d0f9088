import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { createTestDatabase } from '../../support/db.ts';
import { testKafkaClient, createTestKafka } from '../../support/kafka.ts';
import { logCapture } from '../../support/logs.ts';
import { metricValue } from '../../support/metrics.ts';
import { waitFor } from '../../support/wait.ts';
import { closedPort, testLog } from './support.ts';
import { Registry } from '../../../src/platform/observability/metrics.ts';
import { consumerMetrics } from '../../../src/platform/events/consumer-metrics.ts';
import { envelopeToWire } from '../../../src/platform/events/envelope.ts';
import { createKafkaBus } from '../../../src/platform/events/kafka-bus.ts';
import { createLagPoller } from '../../../src/platform/events/kafka-lag.ts';
import { topicsToCreate } from '../../../src/platform/events/topics.ts';
import { newId } from '../../../src/platform/time.ts';

/**
 * consumer_lag must rise while a consumer is stuck. It once moved only when the consumer made
 * progress, so a consumer stuck on one message showed no lag and seed 002's "lag > 5 min" could not fire. The Kafka bus
 * now reads the group's committed offsets and the high watermarks on a timer.
 */

const t = await createTestDatabase();
const k = await createTestKafka();
const bus = createKafkaBus({ client: testKafkaClient, brokers: k.brokers, clientId: 'lag-test', log: testLog, lagPollIntervalMs: 100 });
await bus.start();
after(() => bus.stop());

const wire = (label: string) => ({
  partition: 0,
  ...envelopeToWire({ messageId: newId(), topic: 'x', key: 'k', eventType: 'E', contractVersion: 1, aggregateType: 'A', aggregateId: 'k', occurredAt: new Date().toISOString(), payload: { Label: label } }),
});

describe('consumer lag from the broker', () => {
  test('a consumer blocked in its handler while messages are produced: consumer_lag rises to the waiting messages and the oldest-message age grows, with no progress', async () => {
    const topic = 'pin.test.lag.v1';
    await bus.ensureTopics(topicsToCreate([{ name: topic, partitions: 1, consumed: true }], { prefix: k.prefix }));
    const registry = new Registry();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered = 0;
    let handled = 0;
    const handle = await bus.subscribe(
      {
        name: 'blocked',
        topic,
        groupId: 'blocked-group',
        eventTypes: ['E'],
        handle: async () => {
          entered += 1;
          await gate;
          handled += 1;
        },
      },
      { db: t.db, log: testLog, registry, topicPrefix: k.prefix },
    );
    after(() => {
      open(); // a failed assertion must not leave the consumer blocked (stop waits for its batch)
      return handle.stop();
    });
    const lag = () => metricValue(registry, 'consumer_lag', { consumer: 'blocked', partition: '0' });
    const age = () => metricValue(registry, 'consumer_oldest_unconsumed_age_seconds', { consumer: 'blocked', topic });

    await k.produce(k.topic(topic), [wire('first')]);
    await waitFor('the handler blocked on the first message', () => entered === 1, 20_000);
    await k.produce(k.topic(topic), [wire('2'), wire('3'), wire('4'), wire('5')]);

    await waitFor('consumer_lag = the five waiting messages', async () => (await lag()) === 5, 10_000);
    await waitFor('the age of the oldest waiting message above zero', async () => (await age()) > 0);
    const seen = await age();
    await waitFor('the age keeps growing while the consumer is stuck', async () => (await age()) >= seen + 0.5);
    assert.equal(handled, 0, 'no progress was made meanwhile');
    assert.equal(entered, 1);
    assert.equal(await lag(), 5);

    open();
    await waitFor('caught up: lag 0, age 0', async () => handled === 5 && (await lag()) === 0 && (await age()) === 0, 10_000);
  });

  test('a consumer of a topic the transactional publisher writes commits past the transaction markers: consumer_lag comes back to 0', async () => {
    const topic = 'pin.test.lag.transactional.v1';
    await bus.ensureTopics(topicsToCreate([{ name: topic, partitions: 1, consumed: true }], { prefix: k.prefix }));
    const registry = new Registry();
    let handled = 0;
    const handle = await bus.subscribe(
      { name: 'transactional', topic, groupId: 'transactional-group', eventTypes: ['E'], handle: async () => void (handled += 1) },
      { db: t.db, log: testLog, registry, topicPrefix: k.prefix },
    );
    after(() => handle.stop());
    const publisher = bus.fencedPublisher!(`lag-test.${k.prefix}`);
    // Three transactions: each ends with a commit marker, which takes an offset of its own.
    for (const batch of [['a', 'b'], ['c'], ['d', 'e']]) {
      await publisher.publish(batch.map((label) => ({ topic: k.topic(topic), ...wire(label) })));
    }
    await waitFor('every message handled', () => handled === 5, 20_000);
    const admin = new Kafka({ brokers: k.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    after(() => admin.disconnect());
    const [end] = await admin.fetchTopicOffsets(k.topic(topic));
    assert.equal(end!.high, '8', 'five records and three commit markers');
    // The commit past a batch's marker lands after the batch is handled: waited for, not assumed.
    const committed = async () => (await admin.fetchOffsets({ groupId: k.topic('transactional-group'), topics: [k.topic(topic)] }))[0]!.partitions[0]!.offset;
    await waitFor('the committed offset is the end of the log, markers included', async () => (await committed()) === end!.high, 10_000);
    const lag = () => metricValue(registry, 'consumer_lag', { consumer: 'transactional', partition: '0' });
    await waitFor('consumer_lag back to 0 (the markers are committed past too)', async () => (await lag()) === 0, 10_000);
  });
});

describe('consumer lag poll: broker errors', () => {
  test('a broker that cannot be reached is logged at warn once per failure streak (not per poll); the poll recovers when it answers, and never throws', async () => {
    const capture = logCapture('info');
    const dead = new Kafka({ clientId: 'lag-dead', brokers: [`127.0.0.1:${await closedPort()}`], logLevel: logLevel.NOTHING, connectionTimeout: 200, retry: { retries: 0 } });
    let reachable = false;
    let tries = 0;
    let current: Promise<Admin> | undefined;
    const connected: Admin[] = [];
    const adminOf = () =>
      (current ??= (async () => {
        tries += 1;
        const a = reachable ? k.kafka.admin() : dead.admin();
        await a.connect();
        connected.push(a);
        return a;
      })());
    const poller = createLagPoller({ admin: adminOf, resetAdmin: () => void (current = undefined), intervalMs: 50, timeoutMs: 2000, log: capture.log });
    after(async () => {
      await poller.stop();
      await Promise.all(connected.map((a) => a.disconnect().catch(() => undefined)));
    });
    const registry = new Registry();
    await k.createTopics([{ name: 'pin.test.lag-errors.v1', partitions: 1 }]);
    poller.track({ name: 'errors', topic: 'pin.test.lag-errors.v1', physicalTopic: k.topic('pin.test.lag-errors.v1'), groupId: `${k.prefix}errors-group`, metrics: consumerMetrics(registry) });
    const lines = (msg: RegExp) => capture.lines().filter((l) => msg.test(String(l.msg)));

    // Several failed polls in a row (each a real refused connection): one warning.
    await waitFor('a first failed poll', () => lines(/lag poll failed/).length === 1);
    await waitFor('five failed polls in a row', () => tries >= 5);
    assert.equal(lines(/lag poll failed/).length, 1, 'one warning per failure streak');
    assert.equal(lines(/lag poll failed/)[0]!.level, 40);

    reachable = true;
    await waitFor('recovered', () => lines(/lag poll recovered/).length === 1);
    await k.produce(k.topic('pin.test.lag-errors.v1'), [wire('a'), wire('b')]);
    await waitFor('lag read from the broker', async () => (await metricValue(registry, 'consumer_lag', { consumer: 'errors' })) === 2);
    assert.equal(lines(/lag poll failed/).length, 1);
  });
});
